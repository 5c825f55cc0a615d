-- The AgBOM of each session, one row per agbom/* step bound to its chain entry (src/store/schema.ts agbomVersions).
CREATE TABLE "agbom_versions" (
	"session_id" text NOT NULL,
	"seq" integer NOT NULL,
	"entry_hash" text NOT NULL,
	"method" text NOT NULL,
	"form" text NOT NULL,
	"adopted" boolean NOT NULL,
	"document_jcs" text,
	"diff_jcs" text NOT NULL,
	"agbom_hash" text NOT NULL,
	"reported_hash" text,
	"problems_jcs" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agbom_versions_pkey" PRIMARY KEY("session_id","seq"),
	CONSTRAINT "agbom_versions_form_check" CHECK ("agbom_versions"."form" in ('full', 'diff'))
);
--> statement-breakpoint
ALTER TABLE "agbom_versions" ADD CONSTRAINT "agbom_versions_entry_fk" FOREIGN KEY ("session_id","seq") REFERENCES "context_entries"("session_id","seq") ON DELETE cascade ON UPDATE no action;
