CREATE TABLE "leaderboard_updates" (
	"op_id" uuid NOT NULL,
	"leaderboard_id" uuid NOT NULL,
	"run_start" date NOT NULL,
	"user_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"value" bigint NOT NULL,
	"group_key" text,
	"expires" bigint DEFAULT 0 NOT NULL,
	"ord" bigint NOT NULL,
	"created" timestamp with time zone NOT NULL,
	CONSTRAINT "leaderboard_updates_op_id_leaderboard_id_pk" PRIMARY KEY("op_id","leaderboard_id")
);
--> statement-breakpoint
CREATE TABLE "user_states" (
	"user_id" text PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"streak" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"counters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"indexes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "seq" bigint;--> statement-breakpoint
ALTER TABLE "points_awards" ADD COLUMN "seq" bigint;--> statement-breakpoint
ALTER TABLE "points_awards" ADD COLUMN "pos" integer;--> statement-breakpoint
ALTER TABLE "streak_periods" ADD COLUMN "epoch" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "leaderboard_updates_board_ord" ON "leaderboard_updates" USING btree ("leaderboard_id","ord");--> statement-breakpoint
CREATE INDEX "leaderboard_updates_user" ON "leaderboard_updates" USING btree ("user_id");