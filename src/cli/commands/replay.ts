import type { Command } from 'commander';

/** Registers the `guardian replay` command(s). Not implemented yet: nothing is registered. */
export function registerReplayCommand(_program: Command): void {}
