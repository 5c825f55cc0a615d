-- Cheaper writes per step (bench/store.ts "whole step", Postgres CPU and WAL per step; docs/performance.md #3).
-- replay_keys: two keys per step, read only by the once-a-minute purge, inserted in expiry order: BRIN, not b-tree.
DROP INDEX "replay_keys_expires_at_idx";--> statement-breakpoint
CREATE INDEX "replay_keys_expires_at_idx" ON "replay_keys" USING brin ("expires_at");--> statement-breakpoint
-- context_entries rows are 2-3 KB of JSON text with hashes, UUIDs and signatures, which pglz rarely shrinks by the
-- 25 % it requires: above the default 2 KB target every insert paid for failed compression attempts. Rows up to a
-- page stay inline as they are.
ALTER TABLE "context_entries" SET (toast_tuple_target = 8160);
