// The storage seam (agt-go style: one interface per concern). Implemented once over Drizzle, run on two
// drivers: PGlite (embedded default) and Postgres (DATABASE_URL). The request pipeline only sees this.
import type { ContextEntryContent } from '../chain/index.ts';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface SessionRecord {
  id: string;
  tenantId: string | null;
  agentId: string;
  /** key_id bound at handshake (GUIDE §2: agent/key binding). */
  keyId: string | null;
  /** The negotiated ClientHello/ServerHello, as JSON. */
  hello: Json;
  /** Intent fixed at sessionStart / first agentTrigger. */
  intent: Json;
  /** Session state policies read (turn counters, budgets, provenance trust, …); rebuilt identically at replay. */
  state: Json;
  /** Parent session for subagent chains (subagentStart opens a child chain). */
  parentSessionId: string | null;
  createdAt: Date;
  closedAt: Date | null;
}

/** What the pipeline hands to the store on arrival of an evaluated step (ACS §8.2). */
export interface NewContextEntry {
  /** Hashed members: entry_id = step_id = params.request_id, step_type = method, request_hash, timestamp. */
  content: ContextEntryContent;
  /** The full request params as received (signature included), needed by replay and verify. */
  params: Json;
}

export interface ContextEntryRecord {
  sessionId: string;
  seq: number;
  content: ContextEntryContent;
  previousHash: string | null;
  entryHash: string;
  params: Json;
  /** The full signed result delivered to the agent; null until the decision is recorded. */
  result: Json;
  bundleRevision: string | null;
  evaluationDurationMs: number | null;
  createdAt: Date;
}

export interface AppendedEntry {
  seq: number;
  entryHash: string;
  previousHash: string | null;
}

export type ReplayKeyKind = 'request_id' | 'nonce';

export interface GuardianStore {
  /** Applies pending migrations (idempotent). */
  migrate(): Promise<void>;
  close(): Promise<void>;

  createSession(session: Omit<SessionRecord, 'createdAt' | 'closedAt'> & { createdAt?: Date }): Promise<void>;
  getSession(id: string): Promise<SessionRecord | null>;
  updateSessionState(id: string, patch: Partial<Pick<SessionRecord, 'intent' | 'state' | 'keyId' | 'hello'>>): Promise<void>;
  closeSession(id: string, at: Date): Promise<void>;

  /**
   * Appends exactly once at the session's head: seq, previous_hash and entry_hash are computed inside one
   * serialised transaction, safe across processes and on a session's first entry.
   */
  appendContextEntry(sessionId: string, entry: NewContextEntry): Promise<AppendedEntry>;
  /** Stores the decision delivered for an entry (the signed result, the bundle revision, the duration). */
  recordDecision(sessionId: string, seq: number, decision: { result: Json; bundleRevision: string | null; evaluationDurationMs: number }): Promise<void>;
  getChainHead(sessionId: string): Promise<{ seq: number; entryHash: string } | null>;
  /** Entries in chain order, in pages (cursor = last seq seen). */
  listContextEntries(sessionId: string, options?: { afterSeq?: number; limit?: number }): Promise<ContextEntryRecord[]>;

  /**
   * Records a request_id or nonce for replay protection (ACS §10.3). Returns false when it was already
   * recorded and has not expired. Durable: survives restarts.
   */
  rememberReplayKey(sessionId: string, kind: ReplayKeyKind, value: string, expiresAt: Date): Promise<boolean>;
}
