// How a node hears that the active version or the shadow target changed: Postgres NOTIFY from other processes
// (through the store's own driver), an in-process signal from nodes on the same store object.
import { EventEmitter } from 'node:events';
import { REPLICA_CHANNEL } from '../../store/fleet.ts';
import type { DurableStore } from '../../store/types.ts';

/** The Postgres channel activations and shadow changes are announced on. */
export const NOTIFY_CHANNEL = REPLICA_CHANNEL;

// Nodes sharing one store object in a process (PGlite, tests) hear each other's activations at once.
const localSignals = new WeakMap<DurableStore, EventEmitter>();
export function signalOf(store: DurableStore): EventEmitter {
  let e = localSignals.get(store);
  if (!e) {
    e = new EventEmitter();
    e.setMaxListeners(0);
    localSignals.set(store, e);
  }
  return e;
}
