import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'

/**
 * The growth path past one primary (docs/deployment.md §10) distributes the readings by device:
 * that stays open only while every statement on the readings and their tiers names its device.
 * This reads the SQL of the platform's code (template and quoted literals) and fails on one that
 * reads or writes those tables without `device_id`: a new query across every device's readings
 * is a design decision to make in the open, not by accident.
 */
const root = path.resolve(import.meta.dirname, '..', '..', '..')
const DIRS = ['packages/db/src', 'packages/domain/src', 'services/api/src', 'services/ingest/src', 'services/exporter/src']
const TABLES = /\b(from|join|into|update|copy)\s+(only\s+)?(readings(_hourly|_daily|_daily_offset)?)\b(?![\w])/i
// Keyed by other means: the export's range condition is built by rangeWhere, which starts with the
// device (queries/export-copy.ts); a lock takes no rows; `where false` reads none.
const KEYED_ELSEWHERE = [/\$\{rangeWhere\(/, /^.lock table /i, /\bwhere false\b/i]

function files (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'testing' ? [] : files(full)
    return entry.name.endsWith('.ts') ? [full] : []
  })
}

export function unkeyedStatements (source: string): string[] {
  const literals = [...source.matchAll(/`[^`]*`|'[^'\n]*'/g)].map((m) => m[0])
  return literals.filter((sql) => TABLES.test(sql) && !/\bdevice_id\b/.test(sql) && !KEYED_ELSEWHERE.some((keyed) => keyed.test(sql)))
}

t.test('every statement on the readings and their tiers is keyed by device', async (t) => {
  const sources = DIRS.flatMap((dir) => files(path.join(root, dir)))
  t.ok(sources.length > 50, `the platform's code is read (${sources.length} files)`)
  let statements = 0
  for (const file of sources) {
    const source = readFileSync(file, 'utf8')
    statements += [...source.matchAll(/`[^`]*`|'[^'\n]*'/g)].filter((m) => TABLES.test(m[0])).length
    t.same(unkeyedStatements(source), [], path.relative(root, file))
  }
  // Statements whose tier table is spliced in at run time are not seen here; the rollup planner's
  // take (device, sensor) in every path (history.ts), as the conformance suite exercises.
  t.ok(statements >= 10, `statements on the readings were found (${statements})`)
  const copySql = readFileSync(path.join(root, 'packages/db/src/queries/export-copy.ts'), 'utf8')
  t.match(copySql, /function rangeWhere[^]*?const where = \[`device_id = /, 'rangeWhere starts with the device')
})

t.test('the check finds a statement across devices', async (t) => {
  t.same(unkeyedStatements('sql`select avg(value) from readings where recorded_at > now() - interval \'1 day\'`'), ['`select avg(value) from readings where recorded_at > now() - interval \'1 day\'`'])
  t.same(unkeyedStatements("sql.unsafe('delete from readings_hourly where bucket < $1')"), ["'delete from readings_hourly where bucket < $1'"])
  t.same(unkeyedStatements('sql`select * from readings where device_id = $1`'), [])
  t.same(unkeyedStatements('sql`select * from readings_latest`'), [], 'another table whose name starts the same is not the readings')
})
