-- Each op's streak and counter fields are kept with the op, only ever inserted: in its events row
-- (state), or for an op without one in user_state_changes (which also records its seq). Until now the
-- history writer merged them into user_states with an upsert per user and pass (three jsonb values
-- parsed and merged: the dearest row of an event). Rebuild folds the changes in op order over the
-- user_states rows written before this migration (src/rebuild/user-states.ts).
CREATE TABLE "user_state_changes" (
	"user_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"state" text,
	CONSTRAINT "user_state_changes_user_id_seq_pk" PRIMARY KEY("user_id","seq")
);
--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "state" text;