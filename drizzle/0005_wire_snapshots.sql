CREATE TABLE "wire_snapshots" (
	"id" text PRIMARY KEY NOT NULL,
	"body" text NOT NULL,
	"created" timestamp with time zone DEFAULT now() NOT NULL
);
