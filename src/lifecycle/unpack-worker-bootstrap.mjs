// Worker entry: the unpacker is TypeScript, so register tsx in this thread before importing it (as the policy pool does).
import { register } from 'tsx/esm/api';

register();
await import('./unpack-worker.ts');
