import { fileURLToPath } from 'node:url';

/** The drizzle-kit SQL migrations both drivers apply (repo root `migrations/`, shipped in the image). */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations/', import.meta.url));
