-- One index on events instead of three: every event writes a row, and each index entry costs the
-- history writer's Postgres. The primary key (user, metric, local date, event id) serves the per-user
-- reads (daily summaries by local date, streak recompute, rebuild, the dashboard's user page) and keeps
-- an event written twice (a retried history pass) one row; nothing looks an event up by its id alone.
ALTER TABLE "events" DROP CONSTRAINT "events_pkey";--> statement-breakpoint
DROP INDEX "events_user_metric_created";--> statement-breakpoint
DROP INDEX "events_user_local_date";--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_user_id_metric_id_local_date_id_pk" PRIMARY KEY("user_id","metric_id","local_date","id");
