DROP INDEX "leaderboard_updates_board_ord";--> statement-breakpoint
DROP INDEX "leaderboard_updates_user";--> statement-breakpoint
ALTER TABLE "leaderboard_updates" DROP CONSTRAINT "leaderboard_updates_op_id_leaderboard_id_pk";--> statement-breakpoint
ALTER TABLE "leaderboard_updates" ADD CONSTRAINT "leaderboard_updates_user_id_op_id_leaderboard_id_pk" PRIMARY KEY("user_id","op_id","leaderboard_id");