// Replay worker entry: the worker is TypeScript, so register tsx in this thread before importing it.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
