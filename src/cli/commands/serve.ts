import type { Command } from 'commander';

/** Registers the `guardian serve` command(s). Not implemented yet: nothing is registered. */
export function registerServeCommand(_program: Command): void {}
