import type { Command } from 'commander';

/** Adds `guardian policy test` to the `policy` command group. Stub until the test runner lands. */
export function addPolicyTestCommand(_policy: Command): void {}
