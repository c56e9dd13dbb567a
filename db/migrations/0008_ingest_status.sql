-- What the ingest did not store of a device's messages (issue 35): sensors the catalogue does not
-- know are skipped (the rest of the message is stored), messages that break a rule are refused
-- whole, and both are counted here for the device's owner instead of vanishing. One row per device
-- that had a problem, merged every few seconds by each ingest process, never per message. A CSV
-- import keeps what it skipped beside its counts.
CREATE TABLE "device_ingest_status" (
	"device_id" integer PRIMARY KEY NOT NULL,
	"since" timestamp with time zone DEFAULT now() NOT NULL,
	"last_problem_at" timestamp with time zone NOT NULL,
	"unknown_sensors" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"skipped_values" bigint DEFAULT 0 NOT NULL,
	"rejected_messages" bigint DEFAULT 0 NOT NULL,
	"last_rejection" jsonb
);
--> statement-breakpoint
ALTER TABLE "reading_imports" ADD COLUMN "skipped" jsonb;--> statement-breakpoint
ALTER TABLE "device_ingest_status" ADD CONSTRAINT "device_ingest_status_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;