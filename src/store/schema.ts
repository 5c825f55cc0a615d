// Drizzle schema of the Guardian's durable state. drizzle-kit generates `migrations/` from this file
// (`npx drizzle-kit generate`); both drivers (PGlite, Postgres) apply the same SQL.
//
// JSON documents are stored as their RFC 8785 (JCS) text in `text` columns rather than jsonb: the audit
// chain must re-hash params exactly as received (ACS §8.2), and jsonb rejects U+0000 in strings, which a
// hostile agent can send. JCS text round-trips every JSON value losslessly.
import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  customType,
  doublePrecision,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  bigserial,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/** Raw bytes; PGlite yields Uint8Array, node-postgres a Buffer (a Uint8Array subclass). */
export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType() {
    return 'bytea';
  },
});

const tz = { withTimezone: true, mode: 'date' } as const;

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id'),
    agentId: text('agent_id').notNull(),
    keyId: text('key_id'),
    helloJcs: text('hello_jcs').notNull(),
    intentJcs: text('intent_jcs').notNull(),
    /** The policy session state as JSON text (not canonical: nothing hashes it; the column name is historical). */
    stateJcs: text('state_jcs').notNull(),
    /**
     * The seq of the last chain entry folded into state_jcs (-1: none). The entries after it carry their steps'
     * state changes (context_entries.state_delta_jcs); getSession applies them.
     */
    stateSeq: integer('state_seq').notNull().default(-1),
    parentSessionId: text('parent_session_id'),
    createdAt: timestamp('created_at', tz).notNull().defaultNow(),
    closedAt: timestamp('closed_at', tz),
  },
  (t) => [index('sessions_closed_at_idx').on(t.closedAt), index('sessions_parent_idx').on(t.parentSessionId)],
);

/**
 * One row per chain: the serialisation point of appends. Appends upsert this row first (which both creates
 * it on a session's first entry and row-locks it), so two writers can never both compute the same seq.
 * seq = -1 / head_hash = null for a chain with no entries.
 */
export const chainHeads = pgTable('chain_heads', {
  sessionId: text('session_id').primaryKey(),
  seq: integer('seq').notNull(),
  headHash: text('head_hash'),
  updatedAt: timestamp('updated_at', tz).notNull().defaultNow(),
  /** Set by `audit prune`: entries up to `seq` were deleted; the head and its checkpoint remain. */
  prunedAt: timestamp('pruned_at', tz),
});

export const contextEntries = pgTable(
  'context_entries',
  {
    sessionId: text('session_id').notNull(),
    seq: integer('seq').notNull(),
    entryId: text('entry_id').notNull(),
    stepId: text('step_id').notNull(),
    stepType: text('step_type').notNull(),
    requestHash: text('request_hash'),
    /** The entry timestamp exactly as hashed (the request's params.timestamp string, ACS §8.2). */
    timestamp: text('timestamp'),
    provenanceSummaryJcs: text('provenance_summary_jcs'),
    /** JCS of every hashed member (entry minus entry_hash and previous_hash): what entry_hash covers. */
    contentJcs: text('content_jcs').notNull(),
    previousHash: text('previous_hash'),
    entryHash: text('entry_hash').notNull(),
    /** JCS of params as received, signature included: request_hash is recomputed from it. */
    paramsJcs: text('params_jcs').notNull(),
    /** JCS of the signed result delivered to the agent; null until recordDecision. */
    resultJcs: text('result_jcs'),
    bundleRevision: text('bundle_revision'),
    evaluationDurationMs: doublePrecision('evaluation_duration_ms'),
    /** The step's change to the session state (src/store/state-delta.ts), when the session row did not get it whole. */
    stateDeltaJcs: text('state_delta_jcs'),
    createdAt: timestamp('created_at', tz).notNull().defaultNow(),
  },
  (t) => [
    // The last line of defence against a forked chain: one entry per (session, seq).
    primaryKey({ name: 'context_entries_pkey', columns: [t.sessionId, t.seq] }),
    index('context_entries_entry_id_idx').on(t.sessionId, t.entryId),
  ],
);

/** Replay guard (ACS §10.3): request_id / nonce seen per session until expiry. */
export const replayKeys = pgTable(
  'replay_keys',
  {
    sessionId: text('session_id').notNull(),
    kind: text('kind').notNull(),
    value: text('value').notNull(),
    expiresAt: timestamp('expires_at', tz).notNull(),
  },
  (t) => [
    primaryKey({ name: 'replay_keys_pkey', columns: [t.sessionId, t.kind, t.value] }),
    // Only the once-a-minute purge reads it, and keys arrive in expiry order: a BRIN summary per block range costs
    // a fraction of a b-tree insert per key (two keys per step).
    index('replay_keys_expires_at_idx').using('brin', t.expiresAt),
  ],
);

export const policyBundles = pgTable('policy_bundles', {
  sha256: text('sha256').primaryKey(),
  revision: text('revision').notNull(),
  manifestJcs: text('manifest_jcs').notNull(),
  bytes: bytea('bytes').notNull(),
  source: text('source'),
  createdAt: timestamp('created_at', tz).notNull().defaultNow(),
});

/** Append-only history of which bundle is active; the newest row wins. */
export const policyActivations = pgTable('policy_activations', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  bundleSha256: text('bundle_sha256').notNull(),
  revision: text('revision').notNull(),
  activatedBy: text('activated_by'),
  activatedAt: timestamp('activated_at', tz).notNull().defaultNow(),
});

/** Signed chain heads: detect a consistently rewritten or truncated chain (ACS §8, ACS-Audit). */
export const checkpoints = pgTable(
  'checkpoints',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    /** The chain the checkpoint covers: its session id. */
    scope: text('scope').notNull(),
    seq: integer('seq').notNull(),
    headHash: text('head_hash').notNull(),
    algorithm: text('algorithm').notNull(),
    keyId: text('key_id').notNull(),
    /** Standard base64 signature over checkpointSigningInput(). */
    signature: text('signature').notNull(),
    createdAt: timestamp('created_at', tz).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('checkpoints_scope_seq_key_idx').on(t.scope, t.seq, t.keyId)],
);

// Bundle lifecycle (src/lifecycle/, docs/bundle-lifecycle.md). These four tables were first created by the
// lifecycle itself with CREATE TABLE IF NOT EXISTS; their migration keeps IF NOT EXISTS so databases that already
// have them migrate cleanly. Their JSON columns are jsonb (not JCS text): they hold operational status and
// decisions for reports (`enforcing->>'decision'`), never anything that is hashed into the audit chain.

/** One row per Guardian replica: its heartbeat, the revision it serves and its last sync / error. */
export const lifecycleReplicas = pgTable('lifecycle_replicas', {
  replicaId: text('replica_id').primaryKey(),
  hostname: text('hostname'),
  startedAt: timestamp('started_at', tz).notNull().defaultNow(),
  revision: text('revision'),
  bundleSha256: text('bundle_sha256'),
  shadowRevision: text('shadow_revision'),
  lastSync: timestamp('last_sync', tz),
  lastError: text('last_error'),
  heartbeatAt: timestamp('heartbeat_at', tz).notNull().defaultNow(),
  /** Extra per-replica status (bundle-service pollers). */
  status: jsonb('status'),
});

/** The fleet's shadow candidate: a single row (id = 1); bundle_sha256 null = shadow mode off. */
export const lifecycleShadow = pgTable(
  'lifecycle_shadow',
  {
    id: integer('id').primaryKey(),
    bundleSha256: text('bundle_sha256'),
    setBy: text('set_by'),
    setAt: timestamp('set_at', tz).notNull().defaultNow(),
  },
  (t) => [check('lifecycle_shadow_id_check', sql`${t.id} = 1`)],
);

/** Every decision where the shadow candidate disagreed with the enforcing bundle (capped per target and replica). */
export const lifecycleShadowDiffs = pgTable(
  'lifecycle_shadow_diffs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    replicaId: text('replica_id').notNull(),
    method: text('method').notNull(),
    enforcingRevision: text('enforcing_revision').notNull(),
    shadowRevision: text('shadow_revision').notNull(),
    shadowSha256: text('shadow_sha256').notNull(),
    enforcing: jsonb('enforcing'),
    shadow: jsonb('shadow'),
    shadowError: text('shadow_error'),
    at: timestamp('at', tz).notNull().defaultNow(),
  },
  (t) => [index('lifecycle_shadow_diffs_sha256_idx').on(t.shadowSha256)],
);

/** Who pushed, activated, rolled back or shadowed what, including refusals and their reason. */
export const lifecycleAudit = pgTable('lifecycle_audit', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  actor: text('actor').notNull(),
  action: text('action').notNull(),
  target: text('target'),
  outcome: text('outcome').notNull(),
  detail: text('detail'),
  at: timestamp('at', tz).notNull().defaultNow(),
});

/**
 * Every state-changing admin API call (src/admin/, docs/admin-api.md): which token (by its configured name, never
 * the token), with which role, did what, to what, when, and how it ended — refusals included.
 */
export const adminAudit = pgTable('admin_audit', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  at: timestamp('at', tz).notNull().defaultNow(),
  actor: text('actor').notNull(),
  role: text('role').notNull(),
  method: text('method').notNull(),
  path: text('path').notNull(),
  action: text('action').notNull(),
  target: text('target'),
  status: integer('status').notNull(),
  outcome: text('outcome').notNull(),
  detail: text('detail'),
});

/**
 * The AgBOM of each session (ACS Inspect), one row per agbom/* step, bound to the chain entry that carried it
 * (same session and seq, entry_hash as chained; deleted with it). `form` 'full' rows keep the whole canonical
 * document, 'diff' rows only their change; every row keeps the diff from the previous version and the agbom_hash
 * of the document it results in (src/agbom, src/store/agbom). `adopted`: the decision let the change happen.
 */
export const agbomVersions = pgTable(
  'agbom_versions',
  {
    sessionId: text('session_id').notNull(),
    seq: integer('seq').notNull(),
    entryHash: text('entry_hash').notNull(),
    method: text('method').notNull(),
    form: text('form').notNull(),
    adopted: boolean('adopted').notNull(),
    documentJcs: text('document_jcs'),
    diffJcs: text('diff_jcs').notNull(),
    agbomHash: text('agbom_hash').notNull(),
    reportedHash: text('reported_hash'),
    problemsJcs: text('problems_jcs').notNull(),
    createdAt: timestamp('created_at', tz).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'agbom_versions_pkey', columns: [t.sessionId, t.seq] }),
    foreignKey({
      name: 'agbom_versions_entry_fk',
      columns: [t.sessionId, t.seq],
      foreignColumns: [contextEntries.sessionId, contextEntries.seq],
    }).onDelete('cascade'),
    check('agbom_versions_form_check', sql`${t.form} in ('full', 'diff')`),
  ],
);
