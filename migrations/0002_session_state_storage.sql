-- The session state is rewritten on every step (10-300 KB with provenance) and never searched: store it out of line
-- without pglz compression, which was ~10 % of Postgres CPU per durable decision (perf, bench/server.ts external).
ALTER TABLE "sessions" ALTER COLUMN "state_jcs" SET STORAGE EXTERNAL;
