import type { Command } from 'commander';

/** Registers the `guardian db` command(s). Not implemented yet: nothing is registered. */
export function registerDbCommands(_program: Command): void {}
