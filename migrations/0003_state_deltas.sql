-- A step stores its change to the session state with its entry, and the session row gets the whole state only
-- every few steps (src/store/state-delta.ts): state_seq says which entry the row's state is at.
ALTER TABLE "context_entries" ADD COLUMN "state_delta_jcs" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "state_seq" integer DEFAULT -1 NOT NULL;--> statement-breakpoint
-- Rows written before this migration hold the state as of their chain's head.
UPDATE "sessions" AS s SET "state_seq" = h."seq" FROM "chain_heads" AS h WHERE h."session_id" = s."id";
