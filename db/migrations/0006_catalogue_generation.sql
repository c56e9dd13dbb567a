CREATE TABLE "catalogue_generation" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"value" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "catalogue_generation_one_row" CHECK ("catalogue_generation"."id" = 1)
);
--> statement-breakpoint
INSERT INTO "catalogue_generation" ("id", "value") VALUES (1, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- Every statement that writes the reference data bumps the generation and sends a `catalogue`
-- change on the platform's channel, in its own transaction: an admin's API call, the seed, a
-- cascade from a deleted sensor or an operator's psql alike (packages/db/src/changes.ts).
CREATE FUNCTION esp_catalogue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "catalogue_generation" SET "value" = "value" + 1 WHERE "id" = 1;
  PERFORM pg_notify('esp_changes', '{"topic":"catalogue","payload":null}');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "measurements_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "measurements" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
CREATE TRIGGER "sensors_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "sensors" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
CREATE TRIGGER "kits_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "kits" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
CREATE TRIGGER "kit_sensors_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "kit_sensors" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
CREATE TRIGGER "tags_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "tags" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
CREATE TRIGGER "tag_sensors_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "tag_sensors" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
CREATE TRIGGER "sensor_tags_catalogue_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "sensor_tags" FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed();
--> statement-breakpoint
-- Every device's representation lists its owner's active devices (the ones the caller may see):
-- read from this index alone, in order, without a sort or the table.
CREATE INDEX "devices_owner_active_idx" ON "devices" ("owner_id", "id") INCLUDE ("is_private") WHERE "archived_at" IS NULL;
