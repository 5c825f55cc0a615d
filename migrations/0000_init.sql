CREATE TABLE "chain_heads" (
	"session_id" text PRIMARY KEY NOT NULL,
	"seq" integer NOT NULL,
	"head_hash" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"pruned_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "checkpoints" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"seq" integer NOT NULL,
	"head_hash" text NOT NULL,
	"algorithm" text NOT NULL,
	"key_id" text NOT NULL,
	"signature" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "context_entries" (
	"session_id" text NOT NULL,
	"seq" integer NOT NULL,
	"entry_id" text NOT NULL,
	"step_id" text NOT NULL,
	"step_type" text NOT NULL,
	"request_hash" text,
	"timestamp" text,
	"provenance_summary_jcs" text,
	"content_jcs" text NOT NULL,
	"previous_hash" text,
	"entry_hash" text NOT NULL,
	"params_jcs" text NOT NULL,
	"result_jcs" text,
	"bundle_revision" text,
	"evaluation_duration_ms" double precision,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "context_entries_pkey" PRIMARY KEY("session_id","seq")
);
--> statement-breakpoint
CREATE TABLE "policy_activations" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"bundle_sha256" text NOT NULL,
	"revision" text NOT NULL,
	"activated_by" text,
	"activated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "policy_bundles" (
	"sha256" text PRIMARY KEY NOT NULL,
	"revision" text NOT NULL,
	"manifest_jcs" text NOT NULL,
	"bytes" "bytea" NOT NULL,
	"source" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "replay_keys" (
	"session_id" text NOT NULL,
	"kind" text NOT NULL,
	"value" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "replay_keys_pkey" PRIMARY KEY("session_id","kind","value")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text,
	"agent_id" text NOT NULL,
	"key_id" text,
	"hello_jcs" text NOT NULL,
	"intent_jcs" text NOT NULL,
	"state_jcs" text NOT NULL,
	"parent_session_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"closed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE UNIQUE INDEX "checkpoints_scope_seq_key_idx" ON "checkpoints" USING btree ("scope","seq","key_id");--> statement-breakpoint
CREATE INDEX "context_entries_entry_id_idx" ON "context_entries" USING btree ("session_id","entry_id");--> statement-breakpoint
CREATE INDEX "replay_keys_expires_at_idx" ON "replay_keys" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "sessions_closed_at_idx" ON "sessions" USING btree ("closed_at");--> statement-breakpoint
CREATE INDEX "sessions_parent_idx" ON "sessions" USING btree ("parent_session_id");