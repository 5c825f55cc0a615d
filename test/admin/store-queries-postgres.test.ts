import { afterAll } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from '../store/postgres-schema.ts';
import { defineAdminQuerySuite } from './store-queries-suite.ts';

const schema = uniqueSchema('admin_queries');
afterAll(() => dropSchema(schema));

defineAdminQuerySuite('postgres', () => openStore({ databaseUrl: TEST_DATABASE_URL, schema }));
