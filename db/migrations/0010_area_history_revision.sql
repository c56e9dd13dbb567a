-- A revision of each sensor's closed hours (issue 38). The readings write path takes a new one for
-- a device's sensor when a batch holds a reading older than the hour of its stored latest reading
-- (a backfill); appending never does. So the hours before the latest one's are unchanged while the
-- revision stays, and an api process may keep what it read of them (an area's statistics keep
-- closed days of hourly values).
ALTER TABLE "latest_readings" ADD COLUMN "history_revision" bigint DEFAULT nextval('representation_revision') NOT NULL;