CREATE TABLE "config_changes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "config_changes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"batch" uuid NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"key_id" uuid,
	"key_name" text NOT NULL,
	"key_prefix" text,
	"source" text NOT NULL,
	"resource" text NOT NULL,
	"item" text NOT NULL,
	"action" text NOT NULL,
	"before" jsonb,
	"after" jsonb
);
--> statement-breakpoint
CREATE INDEX "config_changes_at" ON "config_changes" USING btree ("at");