// Each Postgres test file works in its own schema so parallel files never see each other's rows.
import postgres from 'postgres';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export function uniqueSchema(prefix: string): string {
  return `${prefix}_${process.pid}_${Math.floor(Math.random() * 1e9)}`.toLowerCase();
}

export async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop schema if exists "${schema}" cascade`);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
