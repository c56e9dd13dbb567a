-- Daily tiers on wall clocks (issue 23). A day of Madrid starts at 23:00 or 22:00 UTC, so no row of
-- the UTC daily tier fits it, and a year of its days came from 8,760 hourly rows. A day that starts
-- k minutes before UTC midnight and keeps that offset all day is one row of a daily tier shifted
-- by k; a zone uses the shifts of its offsets (Madrid +60 and +120), the days its clocks change on
-- still come from hours. The deployment names its zones (ROLLUP_TIME_ZONES); each whole-hour
-- offset they use is registered here once, filled from the hourly tier, and from then on kept in
-- the write transaction as the UTC tiers are (native engine; TimescaleDB keeps to the hourly tier).
CREATE TABLE readings_day_offsets (
  offset_minutes smallint PRIMARY KEY CHECK (offset_minutes % 60 = 0 AND offset_minutes BETWEEN -1440 AND 1440),
  added_at timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE TABLE readings_daily_offset (
  offset_minutes smallint NOT NULL, device_id integer NOT NULL, sensor_id integer NOT NULL, bucket timestamptz NOT NULL,
  count bigint NOT NULL, mean float8 NOT NULL, m2 float8 NOT NULL, sum float8 NOT NULL,
  min float8 NOT NULL, max float8 NOT NULL,
  first_at timestamptz NOT NULL, first_val float8 NOT NULL, last_at timestamptz NOT NULL, last_val float8 NOT NULL,
  PRIMARY KEY (offset_minutes, device_id, sensor_id, bucket)
);
