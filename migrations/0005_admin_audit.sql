-- The admin audit log (docs/admin-api.md "Audit log"): one row per state-changing admin API call.
CREATE TABLE "admin_audit" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"role" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"action" text NOT NULL,
	"target" text,
	"status" integer NOT NULL,
	"outcome" text NOT NULL,
	"detail" text
);
