-- Time-series engines (DESIGN.md, "Time-series engines"). The engine is chosen here, once:
-- `esp.ts_engine` (set by the migrator from TS_ENGINE) forces one; otherwise TimescaleDB when the
-- server has it, else native. The choice is recorded in esp_settings for every process to read.
--
-- Both engines keep the same tiers with the same columns, holding mergeable state (count, mean,
-- M2, sum, min, max, first and last with their times), so one query layer serves both.

CREATE TABLE "esp_settings" ("key" text PRIMARY KEY, "value" text NOT NULL);
--> statement-breakpoint

-- Chan et al.'s parallel combination of (count, mean, M2) states, as an aggregate: a sum of
-- squares would lose every digit of the deviation of values like 101325 +- 0.01.
CREATE FUNCTION esp_chan_step(state float8[], n float8, mean float8, m2 float8) RETURNS float8[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN n IS NULL OR n = 0 THEN state
    WHEN state[1] = 0 THEN ARRAY[n, mean, m2]
    ELSE ARRAY[
      state[1] + n,
      state[2] + (mean - state[2]) * n / (state[1] + n),
      state[3] + m2 + (mean - state[2]) * (mean - state[2]) * state[1] * n / (state[1] + n)
    ]
  END
$$;
--> statement-breakpoint
CREATE FUNCTION esp_chan_combine(a float8[], b float8[]) RETURNS float8[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT esp_chan_step(a, b[1], b[2], b[3]) $$;
--> statement-breakpoint
CREATE AGGREGATE esp_chan(float8, float8, float8) (
  SFUNC = esp_chan_step, STYPE = float8[], COMBINEFUNC = esp_chan_combine, INITCOND = '{0,0,0}', PARALLEL = SAFE
);
--> statement-breakpoint

DO $engine$
DECLARE
  engine text := nullif(current_setting('esp.ts_engine', true), '');
BEGIN
  IF engine IS NULL THEN
    engine := CASE WHEN EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb') THEN 'timescale' ELSE 'native' END;
  END IF;
  IF engine NOT IN ('timescale', 'native') THEN
    RAISE EXCEPTION 'unknown time-series engine %', engine;
  END IF;
  INSERT INTO esp_settings VALUES ('ts_engine', engine);

  IF engine = 'native' THEN
    -- Raw readings partitioned by month of recorded_at; partitions are created ahead and on demand
    -- (esp_ensure_reading_partitions) before a write transaction needs them.
    DROP TABLE readings;
    CREATE TABLE readings (
      device_id integer NOT NULL,
      sensor_id integer NOT NULL,
      recorded_at timestamptz NOT NULL,
      value double precision,
      raw_value double precision,
      added_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (device_id, sensor_id, recorded_at)
    ) PARTITION BY RANGE (recorded_at);

    CREATE TABLE readings_hourly (
      device_id integer NOT NULL, sensor_id integer NOT NULL, bucket timestamptz NOT NULL,
      count bigint NOT NULL, mean float8 NOT NULL, m2 float8 NOT NULL, sum float8 NOT NULL,
      min float8 NOT NULL, max float8 NOT NULL,
      first_at timestamptz NOT NULL, first_val float8 NOT NULL, last_at timestamptz NOT NULL, last_val float8 NOT NULL,
      PRIMARY KEY (device_id, sensor_id, bucket)
    );
    CREATE TABLE readings_daily (LIKE readings_hourly INCLUDING ALL);
  ELSE
    CREATE EXTENSION IF NOT EXISTS timescaledb;
    PERFORM create_hypertable('readings', 'recorded_at', chunk_time_interval => interval '7 days');
    -- Continuous aggregates are created WITH NO DATA: the migrator runs in one transaction.
    -- Real-time aggregation (materialized_only = false) computes the buckets above a cagg's
    -- watermark from its source at query time, so fresh readings show in both tiers before any
    -- refresh. Below the watermark a cagg serves what was materialized: late writes show after the
    -- next refresh (the policies below; nothing runs them on PGlite, so tests refresh by hand).
    EXECUTE $q$
      CREATE MATERIALIZED VIEW readings_hourly
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT device_id, sensor_id, time_bucket(interval '1 hour', recorded_at) AS bucket,
        count(value) AS count, avg(value) AS mean, coalesce(var_pop(value) * count(value), 0) AS m2,
        sum(value) AS sum, min(value) AS min, max(value) AS max,
        min(recorded_at) AS first_at, first(value, recorded_at) AS first_val,
        max(recorded_at) AS last_at, last(value, recorded_at) AS last_val
      FROM readings
      GROUP BY device_id, sensor_id, time_bucket(interval '1 hour', recorded_at)
      WITH NO DATA
    $q$;
    -- Daily from hourly (hierarchical): finalized caggs (TimescaleDB 2.7+) accept the custom
    -- aggregate esp_chan and an expression over its result, so the daily tier keeps the Chan merge
    -- of the hourly (count, mean, M2) states and needs no plain view over a float8[] column.
    EXECUTE $q$
      CREATE MATERIALIZED VIEW readings_daily
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT device_id, sensor_id, time_bucket(interval '1 day', bucket) AS bucket,
        sum(count)::bigint AS count,
        (esp_chan(count::float8, mean, m2))[2] AS mean,
        (esp_chan(count::float8, mean, m2))[3] AS m2,
        sum(sum) AS sum, min(min) AS min, max(max) AS max,
        min(first_at) AS first_at, first(first_val, first_at) AS first_val,
        max(last_at) AS last_at, last(last_val, last_at) AS last_val
      FROM readings_hourly
      GROUP BY device_id, sensor_id, time_bucket(interval '1 day', bucket)
      WITH NO DATA
    $q$;
    -- No start_offset (NULL = from the earliest data): a policy only works through the invalidations
    -- inside its window, and a write older than the window (a device's stored backlog, a CSV import)
    -- would stay out of the tiers for good, while the native engine merges it at once. A refresh
    -- costs the invalidated ranges plus the new buckets, not the whole history, so NULL is cheap.
    PERFORM add_continuous_aggregate_policy('readings_hourly', start_offset => NULL, end_offset => interval '1 hour', schedule_interval => interval '30 minutes');
    PERFORM add_continuous_aggregate_policy('readings_daily', start_offset => NULL, end_offset => interval '1 day', schedule_interval => interval '1 hour');
    EXECUTE 'ALTER TABLE readings SET (timescaledb.compress, timescaledb.compress_segmentby = ''device_id, sensor_id'', timescaledb.compress_orderby = ''recorded_at'')';
    PERFORM add_compression_policy('readings', interval '30 days');
  END IF;
END
$engine$;
--> statement-breakpoint

-- Monthly partitions of the native engine's readings covering [from_at, to_at]. Idempotent and safe
-- to call from several processes; called outside write transactions, because attaching a partition
-- locks the parent table.
CREATE FUNCTION esp_ensure_reading_partitions(from_at timestamptz, to_at timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  month timestamptz := date_trunc('month', from_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  created integer := 0;
  name text;
BEGIN
  IF (SELECT value FROM esp_settings WHERE key = 'ts_engine') <> 'native' THEN
    RETURN 0;
  END IF;
  WHILE month <= to_at LOOP
    name := 'readings_' || to_char(month AT TIME ZONE 'UTC', 'YYYY_MM');
    IF to_regclass(name) IS NULL THEN
      PERFORM pg_advisory_xact_lock(7250331003);
      IF to_regclass(name) IS NULL THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF readings FOR VALUES FROM (%L) TO (%L)',
          name, month, (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
        created := created + 1;
      END IF;
    END IF;
    month := (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
  END LOOP;
  RETURN created;
END
$$;
--> statement-breakpoint
SELECT esp_ensure_reading_partitions(now() - interval '1 month', now() + interval '3 months');
