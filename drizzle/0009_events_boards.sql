-- An event's per-run leaderboard values travel in its events row (one text value for all its boards)
-- instead of a leaderboard_updates row per board: each row and index entry costs the history writer's
-- Postgres (bench:writer at 1,500/s: 82-90 µs per event against 99-109). Other ops' values stay rows of
-- leaderboard_updates, and rows written before this migration stay there. Rebuild and verify read both
-- through leaderboard_updates_all, one row per op and board, with the table's columns.
ALTER TABLE "events" ADD COLUMN "boards" text;--> statement-breakpoint
CREATE VIEW "public"."leaderboard_updates_all" AS (select op_id, leaderboard_id, run_start, user_id, seq, value, group_key, expires, ord, created
  from leaderboard_updates
  union all
  select e.id, p[1]::uuid, p[2]::date, e.user_id, e.seq, p[3]::int8,
    case when cardinality(p) >= 6 then p[6] end, p[4]::int8, p[5]::int8, e.created
  from events e
  cross join lateral unnest(string_to_array(e.boards, ';')) as b(entry)
  cross join lateral string_to_array(b.entry, '|') as p
  where e.boards is not null);