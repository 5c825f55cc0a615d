// Each Postgres test file works in its own schema so parallel files never see each other's rows.
import pg from 'pg';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export function uniqueSchema(prefix: string): string {
  return `${prefix}_${process.pid}_${Math.floor(Math.random() * 1e9)}`.toLowerCase();
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}
