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

/** A database of a test file's own on the test server (for tests that run `guardian serve` processes on it). */
export function scratchDatabase(prefix: string): { url: string; create(): Promise<void>; drop(): Promise<void> } {
  const name = uniqueSchema(prefix);
  const u = new URL(TEST_DATABASE_URL);
  u.pathname = `/${name}`;
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  return {
    url: u.toString(),
    create: () => admin(`create database "${name}"`),
    drop: () => admin(`drop database if exists "${name}" with (force)`),
  };
}
