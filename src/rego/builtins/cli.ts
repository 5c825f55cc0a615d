import type { Command } from 'commander';

/** Adds `guardian policy capabilities` to the `policy` command group. Stub until the builtin library lands. */
export function addPolicyCapabilitiesCommand(_policy: Command): void {}
