-- The native engine's readings key carries the value (INCLUDE), so every read of one sensor's
-- history in key order (raw rollups, streamed exports, CSV archives) is an index-only scan: the
-- heap is laid out by arrival time, all sensors of a device interleaved, so reading one sensor
-- through the heap touches every page of the range once per sensor. The key itself is unchanged
-- (ON CONFLICT and first-write-wins still name device, sensor and time), and the value is written
-- once, so it costs a wider index entry and no update path.
--
-- Index-only scans skip the heap on the pages the visibility map marks all-visible, which
-- autovacuum sets as partitions fill (insert-only tables are vacuumed for their inserts too).
--
-- TimescaleDB keeps its key: compressed chunks (older than 30 days) are read per (device, sensor)
-- segment anyway, and its hypertable constraints cannot be changed once compression is on.
DO $covering$
BEGIN
  IF (SELECT value FROM esp_settings WHERE key = 'ts_engine') = 'native' THEN
    ALTER TABLE readings DROP CONSTRAINT readings_pkey,
      ADD CONSTRAINT readings_pkey PRIMARY KEY (device_id, sensor_id, recorded_at) INCLUDE (value);
  END IF;
END
$covering$;
