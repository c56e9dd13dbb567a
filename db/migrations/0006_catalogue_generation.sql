CREATE TABLE "catalogue_generation" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"value" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "catalogue_generation_one_row" CHECK ("catalogue_generation"."id" = 1)
);
--> statement-breakpoint
INSERT INTO "catalogue_generation" ("id", "value") VALUES (1, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
-- Every statement that changes the reference data bumps the generation and sends a `catalogue`
-- change on the platform's channel, in its own transaction: an admin's API call, a cascade from a
-- deleted sensor or an operator's psql alike (packages/db/src/changes.ts). A statement that
-- changes no row (the seed's `on conflict do nothing` at every start) changes nothing: processes
-- keep what they hold.
CREATE FUNCTION esp_catalogue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'TRUNCATE' THEN
    IF NOT EXISTS (SELECT 1 FROM changed_rows) THEN RETURN NULL; END IF;
  END IF;
  UPDATE "catalogue_generation" SET "value" = "value" + 1 WHERE "id" = 1;
  PERFORM pg_notify('esp_changes', '{"topic":"catalogue","payload":null}');
  RETURN NULL;
END $$;
--> statement-breakpoint
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['measurements', 'sensors', 'kits', 'kit_sensors', 'tags', 'tag_sensors', 'sensor_tags'] LOOP
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed()', t || '_catalogue_insert', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed()', t || '_catalogue_update', t);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed()', t || '_catalogue_delete', t);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION esp_catalogue_changed()', t || '_catalogue_truncate', t);
  END LOOP;
END $$;
--> statement-breakpoint
-- Every device's representation lists its owner's active devices (the ones the caller may see):
-- read from this index alone, in order, without a sort or the table.
CREATE INDEX "devices_owner_active_idx" ON "devices" ("owner_id", "id") INCLUDE ("is_private") WHERE "archived_at" IS NULL;
