import { afterAll } from 'vitest';
import { openStore } from '../../src/store/index.ts';
import { TEST_DATABASE_URL, dropSchema, uniqueSchema } from '../store/postgres-schema.ts';
import { defineTamperSuite } from './tamper-suite.ts';

const schema = uniqueSchema('audit_tamper');
afterAll(() => dropSchema(schema));

defineTamperSuite('postgres', (extra) => openStore({ databaseUrl: TEST_DATABASE_URL, schema, ...extra }));
