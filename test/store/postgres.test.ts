import { afterAll } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { defineStorageSuite } from './storage-suite.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from './postgres-schema.ts';

const schema = uniqueSchema('store_suite');
afterAll(() => dropSchema(schema));

defineStorageSuite('postgres', (extra) => openStore({ databaseUrl: TEST_DATABASE_URL, schema, ...extra }));
