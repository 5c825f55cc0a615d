// Who may call the admin API (docs/admin-api.md "Tokens and roles"). Bearer tokens are mapped to a name and a
// role: viewer (read everything but secrets), operator (plus bundle push/activate/rollback/shadow and replay),
// admin (plus token management). Sources, all merged:
//   GUARDIAN_ADMIN_TOKEN        one token, role admin, name "admin" (the original single shared token)
//   GUARDIAN_ADMIN_TOKENS       JSON: {"tokens":[{"name","role","token"|"sha256"}]}
//   GUARDIAN_ADMIN_TOKENS_FILE  a file with the same JSON (reloadable; `sha256` keeps the token itself out of it)
// A presented token is hashed with SHA-256 and compared with every configured hash by timingSafeEqual, all of
// them, so neither the position of a match nor a length difference shows in the time taken.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** True when `role` includes everything `required` may do. */
export function roleAllows(role: Role, required: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(required);
}

export interface Principal {
  /** The token's configured name: what the audit log records. */
  name: string;
  role: Role;
}

interface TokenEntry extends Principal {
  sha256: Buffer;
  source: string;
}

export class TokenConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TokenConfigError';
  }
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

const NAME = /^[A-Za-z0-9._@-]{1,64}$/;

function parseTokenList(text: string, source: string): TokenEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new TokenConfigError(`${source}: not JSON`);
  }
  const list = (doc as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(list)) throw new TokenConfigError(`${source}: expected {"tokens": [...]}`);
  return list.map((raw: unknown, i) => {
    const t = (raw ?? {}) as Record<string, unknown>;
    const where = `${source}: tokens[${i}]`;
    if (typeof t.name !== 'string' || !NAME.test(t.name))
      throw new TokenConfigError(`${where}: name must be 1-64 of A-Z a-z 0-9 . _ @ -`);
    if (typeof t.role !== 'string' || !(ROLES as readonly string[]).includes(t.role))
      throw new TokenConfigError(`${where}: role must be one of ${ROLES.join(', ')}`);
    let sha256: Buffer;
    if (typeof t.token === 'string' && t.sha256 === undefined) {
      // Short tokens are guessable whatever the rate limit: refuse them rather than run with one.
      if (t.token.length < 16) throw new TokenConfigError(`${where}: token must be at least 16 characters`);
      sha256 = digest(t.token);
    } else if (typeof t.sha256 === 'string' && t.token === undefined && /^[0-9a-f]{64}$/.test(t.sha256)) {
      sha256 = Buffer.from(t.sha256, 'hex');
    } else throw new TokenConfigError(`${where}: give exactly one of token or sha256 (64 lowercase hex digits)`);
    return { name: t.name, role: t.role as Role, sha256, source };
  });
}

export interface TokenSources {
  env: Readonly<Record<string, string | undefined>>;
  /** A single admin token given directly (createAdminApp's `token`); replaces GUARDIAN_ADMIN_TOKEN. */
  token?: string;
}

/** The configured tokens; reload() rereads GUARDIAN_ADMIN_TOKENS_FILE (an error keeps the previous table). */
export class TokenTable {
  #entries: TokenEntry[] = [];
  readonly #sources: TokenSources;

  constructor(sources: TokenSources) {
    this.#sources = sources;
    this.#entries = TokenTable.#load(sources);
  }

  static #load(sources: TokenSources): TokenEntry[] {
    const { env } = sources;
    const entries: TokenEntry[] = [];
    const single = sources.token ?? env.GUARDIAN_ADMIN_TOKEN ?? '';
    if (single) entries.push({ name: 'admin', role: 'admin', sha256: digest(single), source: 'GUARDIAN_ADMIN_TOKEN' });
    if (env.GUARDIAN_ADMIN_TOKENS) entries.push(...parseTokenList(env.GUARDIAN_ADMIN_TOKENS, 'GUARDIAN_ADMIN_TOKENS'));
    const file = env.GUARDIAN_ADMIN_TOKENS_FILE;
    if (file) {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new TokenConfigError(`${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
      }
      entries.push(...parseTokenList(text, file));
    }
    const names = new Set<string>();
    for (const e of entries) {
      if (names.has(e.name)) throw new TokenConfigError(`token name ${JSON.stringify(e.name)} is configured twice`);
      names.add(e.name);
    }
    return entries;
  }

  /** True when at least one token is configured (else the admin API and the console are off). */
  get enabled(): boolean {
    return this.#entries.length > 0;
  }

  /** Names, roles and where each token is configured: never the token or its hash. */
  list(): { name: string; role: Role; source: string }[] {
    return this.#entries.map(({ name, role, source }) => ({ name, role, source }));
  }

  reload(): void {
    this.#entries = TokenTable.#load(this.#sources);
  }

  /** The principal of a presented token, or null. Compares against every entry. */
  authenticate(presented: string): Principal | null {
    const hash = digest(presented);
    let found: TokenEntry | null = null;
    for (const e of this.#entries) if (timingSafeEqual(hash, e.sha256) && !found) found = e;
    return found ? { name: found.name, role: found.role } : null;
  }
}

/**
 * Failed attempts per key (the client address for bad tokens, the token name for calls its role forbids): more
 * than `max` in `windowMs` locks the key until the window has passed, correct token or not, so guessing costs
 * the window per `max` tries.
 */
export class FailureLimiter {
  readonly #failures = new Map<string, number[]>();
  constructor(
    readonly max = 10,
    readonly windowMs = 60_000,
    readonly now: () => number = Date.now,
  ) {}

  #recent(key: string): number[] {
    const since = this.now() - this.windowMs;
    const list = (this.#failures.get(key) ?? []).filter((t) => t > since);
    if (list.length) this.#failures.set(key, list);
    else this.#failures.delete(key);
    return list;
  }

  /** Seconds until `key` may try again; 0 when it is not locked. */
  retryAfter(key: string): number {
    const list = this.#recent(key);
    if (list.length < this.max) return 0;
    return Math.max(1, Math.ceil((list[list.length - this.max] + this.windowMs - this.now()) / 1000));
  }

  fail(key: string): void {
    const list = this.#recent(key);
    list.push(this.now());
    this.#failures.set(key, list);
    // Bounded memory under a spray of addresses: drop the oldest keys.
    if (this.#failures.size > 10_000) {
      const oldest = this.#failures.keys().next().value;
      if (oldest !== undefined) this.#failures.delete(oldest);
    }
  }
}
