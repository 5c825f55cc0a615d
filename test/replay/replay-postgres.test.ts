import { afterAll } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from '../store/postgres-schema.ts';
import { defineReplaySuite } from './replay-suite.ts';

const schema = uniqueSchema('replay');
afterAll(() => dropSchema(schema));

defineReplaySuite('postgres', () => openStore({ databaseUrl: TEST_DATABASE_URL, schema }));
