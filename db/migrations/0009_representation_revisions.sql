CREATE SEQUENCE "public"."representation_revision" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "revision" bigint DEFAULT nextval('representation_revision') NOT NULL;--> statement-breakpoint
ALTER TABLE "device_ingest_status" ADD COLUMN "revision" bigint DEFAULT nextval('representation_revision') NOT NULL;--> statement-breakpoint
ALTER TABLE "devices" ADD COLUMN "revision" bigint DEFAULT nextval('representation_revision') NOT NULL;--> statement-breakpoint
-- Revisions of representations (DESIGN.md, Read). A device's representation is kept serialized
-- per process, keyed by its revision, its owner's and its ingest status's: a read checks them with
-- one cheap statement and sends the kept bytes when they match. So every write to anything a
-- representation shows takes a new revision in its own transaction, whoever makes it (the API,
-- the ingest, psql):
--  * a devices or users row: every update (fields, state, latest reading time, status message; the
--    readings write path updates the device row whenever it stores readings, so the latest values
--    are covered by it);
--  * a device's tags, postprocessing, experiments and components: the device's;
--  * its ingest status (merged every few seconds): the status row's own, so that the merge locks
--    no device row that the readings write path locks too;
--  * the set of a user's active devices and their privacy (every device lists its owner's device
--    ids): the owner's, never each sibling's, so archiving a thousand devices costs a thousand
--    updates, not a million.
-- The catalogue (sensors, kits, tags' names) has its own generation (0006), also part of the key.
CREATE FUNCTION esp_take_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.revision := nextval('representation_revision');
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER devices_take_revision BEFORE UPDATE ON devices FOR EACH ROW EXECUTE FUNCTION esp_take_revision();
--> statement-breakpoint
CREATE TRIGGER users_take_revision BEFORE UPDATE ON users FOR EACH ROW EXECUTE FUNCTION esp_take_revision();
--> statement-breakpoint
CREATE TRIGGER device_ingest_status_take_revision BEFORE UPDATE ON device_ingest_status FOR EACH ROW EXECUTE FUNCTION esp_take_revision();
--> statement-breakpoint
-- A device joined or left its owner's active devices, or changed privacy: the owner (old and new).
CREATE FUNCTION esp_owner_devices_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    UPDATE users SET revision = revision WHERE id = OLD.owner_id;
  END IF;
  IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.owner_id <> OLD.owner_id) THEN
    UPDATE users SET revision = revision WHERE id = NEW.owner_id;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER devices_owner_insert AFTER INSERT ON devices FOR EACH ROW EXECUTE FUNCTION esp_owner_devices_changed();
--> statement-breakpoint
CREATE TRIGGER devices_owner_delete AFTER DELETE ON devices FOR EACH ROW EXECUTE FUNCTION esp_owner_devices_changed();
--> statement-breakpoint
-- The readings write path updates device rows with every batch: the condition is checked without
-- calling the function, so it costs that path next to nothing.
CREATE TRIGGER devices_owner_update AFTER UPDATE ON devices FOR EACH ROW
  WHEN (NEW.owner_id <> OLD.owner_id OR NEW.is_private <> OLD.is_private OR (NEW.archived_at IS NULL) <> (OLD.archived_at IS NULL))
  EXECUTE FUNCTION esp_owner_devices_changed();
--> statement-breakpoint
-- Rows of a table that hangs off one device changed: those devices, once each per statement (a
-- kit's dozen components, or a page of tags, take one update of the device, not one each).
CREATE FUNCTION esp_device_parts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE devices SET revision = revision WHERE id IN (SELECT device_id FROM new_parts);
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE devices SET revision = revision WHERE id IN (SELECT device_id FROM old_parts);
  ELSE
    UPDATE devices SET revision = revision WHERE id IN (SELECT device_id FROM new_parts UNION SELECT device_id FROM old_parts);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['device_tags', 'postprocessings', 'experiment_devices', 'components'] LOOP
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_parts FOR EACH STATEMENT EXECUTE FUNCTION esp_device_parts_changed()', t || '_insert_revision', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_parts NEW TABLE AS new_parts FOR EACH STATEMENT EXECUTE FUNCTION esp_device_parts_changed()', t || '_update_revision', t);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_parts FOR EACH STATEMENT EXECUTE FUNCTION esp_device_parts_changed()', t || '_delete_revision', t);
  END LOOP;
END $$;
