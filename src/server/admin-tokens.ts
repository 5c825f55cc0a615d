// Whether an admin token source is set (docs/admin-api.md): GUARDIAN_ADMIN_TOKEN, GUARDIAN_ADMIN_TOKENS or
// GUARDIAN_ADMIN_TOKENS_FILE. Kept apart from admin.ts so that asking does not load the admin API.
const ADMIN_TOKEN_SOURCES = ['GUARDIAN_ADMIN_TOKEN', 'GUARDIAN_ADMIN_TOKENS', 'GUARDIAN_ADMIN_TOKENS_FILE'] as const;

export function adminTokenConfigured(env: Readonly<Record<string, string | undefined>>): boolean {
  return ADMIN_TOKEN_SOURCES.some((name) => Boolean(env[name]));
}
