import type { Command } from 'commander';

/** Registers the `guardian policy` command(s). Not implemented yet: nothing is registered. */
export function registerPolicyCommands(_program: Command): void {}
