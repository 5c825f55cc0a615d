import { openStore } from '../../src/store/index.ts';
import { defineAdminQuerySuite } from './store-queries-suite.ts';

defineAdminQuerySuite('pglite', () => openStore({ inMemory: true }));
