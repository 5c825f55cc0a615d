import { openStore } from '../../src/store/index.ts';
import { defineTamperSuite } from './tamper-suite.ts';

defineTamperSuite('pglite', (extra) => openStore({ inMemory: true, ...extra }));
