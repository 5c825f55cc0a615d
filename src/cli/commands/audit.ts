import type { Command } from 'commander';

/** Registers the `guardian audit` command(s). Not implemented yet: nothing is registered. */
export function registerAuditCommands(_program: Command): void {}
