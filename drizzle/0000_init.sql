CREATE TABLE "achievement_completions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"achievement_id" uuid NOT NULL,
	"achieved_at" timestamp with time zone NOT NULL,
	"event_id" uuid,
	"backdated" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "achievements" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"badge_url" text,
	"trigger" text NOT NULL,
	"status" text DEFAULT 'inactive' NOT NULL,
	"metric_id" uuid,
	"metric_value" double precision,
	"event_attributes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"streak_length" integer,
	"achievement_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"user_attributes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "achievements_key_unique" UNIQUE("key")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"prefix" text NOT NULL,
	"secret_hash" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"rate_limit_per_second" integer,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used" timestamp with time zone,
	"revoked" timestamp with time zone,
	CONSTRAINT "api_keys_prefix_unique" UNIQUE("prefix")
);
--> statement-breakpoint
CREATE TABLE "attributes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"metric_id" uuid NOT NULL,
	"value_micros" bigint NOT NULL,
	"attributes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"idempotency_key" text,
	"local_date" date NOT NULL,
	"tz" text NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leaderboard_rank_changes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"leaderboard_id" uuid NOT NULL,
	"run_start" date NOT NULL,
	"group_key" text DEFAULT '' NOT NULL,
	"user_id" text NOT NULL,
	"previous_rank" integer,
	"rank" integer,
	"previous_value" double precision,
	"value" double precision,
	"created" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leaderboard_run_results" (
	"leaderboard_id" uuid NOT NULL,
	"run_start" date NOT NULL,
	"run_end" date,
	"group_key" text DEFAULT '' NOT NULL,
	"user_id" text NOT NULL,
	"rank" integer NOT NULL,
	"value" double precision NOT NULL,
	"finalized_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "leaderboard_run_results_leaderboard_id_run_start_group_key_user_id_pk" PRIMARY KEY("leaderboard_id","run_start","group_key","user_id")
);
--> statement-breakpoint
CREATE TABLE "leaderboards" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"status" text DEFAULT 'inactive' NOT NULL,
	"rank_by" text NOT NULL,
	"metric_id" uuid,
	"points_system_id" uuid,
	"max_participants" integer DEFAULT 1000 NOT NULL,
	"start" date NOT NULL,
	"end" date,
	"breakdown_attributes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"run_unit" text,
	"run_interval" integer DEFAULT 0 NOT NULL,
	"activated_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "leaderboards_key_unique" UNIQUE("key")
);
--> statement-breakpoint
CREATE TABLE "metrics" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"unit_type" text DEFAULT 'number' NOT NULL,
	"units" text,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "metrics_key_unique" UNIQUE("key")
);
--> statement-breakpoint
CREATE TABLE "points_awards" (
	"id" uuid PRIMARY KEY NOT NULL,
	"event_id" uuid,
	"user_id" text NOT NULL,
	"system_id" uuid NOT NULL,
	"trigger_id" uuid NOT NULL,
	"awarded" bigint NOT NULL,
	"total" bigint NOT NULL,
	"boosts" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"local_date" date NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "points_boosts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"system_id" uuid NOT NULL,
	"name" text NOT NULL,
	"start" date NOT NULL,
	"end" date,
	"multiplier" double precision NOT NULL,
	"rounding" text DEFAULT 'down' NOT NULL,
	"user_id" text,
	"user_attributes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "points_levels" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"system_id" uuid NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"badge_url" text,
	"points" bigint NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "points_systems" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"badge_url" text,
	"max_points" bigint,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "points_systems_key_unique" UNIQUE("key")
);
--> statement-breakpoint
CREATE TABLE "points_triggers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"system_id" uuid NOT NULL,
	"type" text NOT NULL,
	"points" bigint NOT NULL,
	"status" text DEFAULT 'inactive' NOT NULL,
	"user_attributes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"metric_id" uuid,
	"metric_threshold" double precision,
	"event_attributes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"achievement_id" uuid,
	"streak_length" integer,
	"time_unit" text,
	"time_interval" integer,
	"activated_at" timestamp with time zone,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "streak_pauses" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" text NOT NULL,
	"start" date NOT NULL,
	"end" date NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "streak_periods" (
	"user_id" text NOT NULL,
	"period_start" date NOT NULL,
	"period_end" date NOT NULL,
	"length" integer NOT NULL,
	"used_freeze" boolean DEFAULT false NOT NULL,
	"used_pause" boolean DEFAULT false NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "streak_periods_user_id_period_start_pk" PRIMARY KEY("user_id","period_start")
);
--> statement-breakpoint
CREATE TABLE "streak_settings" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	"frequency" text DEFAULT 'daily' NOT NULL,
	"mode" text DEFAULT 'all' NOT NULL,
	"conditions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"freezes_enabled" boolean DEFAULT false NOT NULL,
	"max_freezes" integer DEFAULT 1 NOT NULL,
	"initial_freezes" integer DEFAULT 0 NOT NULL,
	"freeze_auto_earn_amount" integer,
	"freeze_auto_earn_interval" integer,
	"enabled_at" timestamp with time zone,
	"auto_earn_enabled_at" timestamp with time zone,
	"epoch" integer DEFAULT 0 NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text,
	"name" text,
	"tz" text,
	"attributes" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"subscribe_to_emails" boolean DEFAULT true NOT NULL,
	"device_tokens" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"control" boolean DEFAULT false NOT NULL,
	"preferences" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"event_id" text NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"next_attempt_at" timestamp with time zone,
	"last_status_code" integer,
	"last_error" text,
	"created" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"url" text NOT NULL,
	"description" text,
	"event_types" jsonb NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"secret" text NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL,
	"updated" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "achievements" ADD CONSTRAINT "achievements_metric_id_metrics_id_fk" FOREIGN KEY ("metric_id") REFERENCES "public"."metrics"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "leaderboards" ADD CONSTRAINT "leaderboards_metric_id_metrics_id_fk" FOREIGN KEY ("metric_id") REFERENCES "public"."metrics"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "leaderboards" ADD CONSTRAINT "leaderboards_points_system_id_points_systems_id_fk" FOREIGN KEY ("points_system_id") REFERENCES "public"."points_systems"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "points_boosts" ADD CONSTRAINT "points_boosts_system_id_points_systems_id_fk" FOREIGN KEY ("system_id") REFERENCES "public"."points_systems"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "points_levels" ADD CONSTRAINT "points_levels_system_id_points_systems_id_fk" FOREIGN KEY ("system_id") REFERENCES "public"."points_systems"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "points_triggers" ADD CONSTRAINT "points_triggers_system_id_points_systems_id_fk" FOREIGN KEY ("system_id") REFERENCES "public"."points_systems"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "points_triggers" ADD CONSTRAINT "points_triggers_metric_id_metrics_id_fk" FOREIGN KEY ("metric_id") REFERENCES "public"."metrics"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "achievement_completions_user_ach" ON "achievement_completions" USING btree ("user_id","achievement_id");--> statement-breakpoint
CREATE UNIQUE INDEX "attributes_type_key" ON "attributes" USING btree ("type","key");--> statement-breakpoint
CREATE INDEX "events_user_metric_created" ON "events" USING btree ("user_id","metric_id","created");--> statement-breakpoint
CREATE INDEX "events_user_local_date" ON "events" USING btree ("user_id","local_date");--> statement-breakpoint
CREATE INDEX "leaderboard_rank_changes_user" ON "leaderboard_rank_changes" USING btree ("leaderboard_id","user_id","run_start","created");--> statement-breakpoint
CREATE INDEX "points_awards_user_system_created" ON "points_awards" USING btree ("user_id","system_id","created");--> statement-breakpoint
CREATE INDEX "points_boosts_system" ON "points_boosts" USING btree ("system_id");--> statement-breakpoint
CREATE INDEX "points_levels_system" ON "points_levels" USING btree ("system_id");--> statement-breakpoint
CREATE INDEX "points_triggers_system" ON "points_triggers" USING btree ("system_id");--> statement-breakpoint
CREATE INDEX "streak_pauses_user" ON "streak_pauses" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_event_endpoint" ON "webhook_deliveries" USING btree ("event_id","endpoint_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_created" ON "webhook_deliveries" USING btree ("endpoint_id","created");