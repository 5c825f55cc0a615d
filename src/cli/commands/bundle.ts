import type { Command } from 'commander';

/** Registers the `guardian bundle` command(s). Not implemented yet: nothing is registered. */
export function registerBundleCommands(_program: Command): void {}
