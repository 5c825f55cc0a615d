-- Bundle lifecycle tables (src/lifecycle/). IF NOT EXISTS: databases that ran the lifecycle before this migration
-- already have them, created by its former ad-hoc DDL with the same columns.
CREATE TABLE IF NOT EXISTS "lifecycle_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text,
	"outcome" text NOT NULL,
	"detail" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "lifecycle_replicas" (
	"replica_id" text PRIMARY KEY NOT NULL,
	"hostname" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revision" text,
	"bundle_sha256" text,
	"shadow_revision" text,
	"last_sync" timestamp with time zone,
	"last_error" text,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"status" jsonb
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "lifecycle_shadow" (
	"id" integer PRIMARY KEY NOT NULL,
	"bundle_sha256" text,
	"set_by" text,
	"set_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "lifecycle_shadow_id_check" CHECK ("lifecycle_shadow"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "lifecycle_shadow_diffs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"replica_id" text NOT NULL,
	"method" text NOT NULL,
	"enforcing_revision" text NOT NULL,
	"shadow_revision" text NOT NULL,
	"shadow_sha256" text NOT NULL,
	"enforcing" jsonb,
	"shadow" jsonb,
	"shadow_error" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "lifecycle_shadow_diffs_sha256_idx" ON "lifecycle_shadow_diffs" USING btree ("shadow_sha256");