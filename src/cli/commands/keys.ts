import type { Command } from 'commander';

/** Registers the `guardian keys` command(s). Not implemented yet: nothing is registered. */
export function registerKeysCommands(_program: Command): void {}
