-- One index per table instead of two: most events write a completion or an award.
-- achievement_completions: the unique (user, achievement) index becomes the primary key; the id is no longer indexed.
ALTER TABLE "achievement_completions" DROP CONSTRAINT "achievement_completions_pkey";--> statement-breakpoint
ALTER TABLE "achievement_completions" ADD CONSTRAINT "achievement_completions_user_id_achievement_id_pk" PRIMARY KEY USING INDEX "achievement_completions_user_ach";--> statement-breakpoint
-- points_awards: one primary key (user, system, time, award id) serves the per-user reads and keeps an award one row.
ALTER TABLE "points_awards" DROP CONSTRAINT "points_awards_pkey";--> statement-breakpoint
DROP INDEX "points_awards_user_system_created";--> statement-breakpoint
ALTER TABLE "points_awards" ADD CONSTRAINT "points_awards_user_id_system_id_created_id_pk" PRIMARY KEY("user_id","system_id","created","id");
