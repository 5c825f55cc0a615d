import { openStore } from '../../src/store/index.ts';
import { defineReplaySuite } from './replay-suite.ts';

defineReplaySuite('pglite', () => openStore({ inMemory: true }));
