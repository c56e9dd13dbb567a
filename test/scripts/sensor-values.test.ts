import t from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import {
  BALCONY, FIRMWARE_SENSORS, PHYSICAL_RANGES, quantityOf, quantityOfSensor, type Quantity, seedOf, sensorValue, type Site, solarHour, sunHeight
} from '../../scripts/sensor-values.js'

/**
 * The values `pnpm simulate` and `pnpm demo` send (scripts/sensor-values.ts), over simulated weeks:
 * every sensor inside its physical range and the bands a kit outdoors keeps to, the orderings that
 * hold between sensors, and the daily cycles (light 0 at local night, warmest mid-afternoon, more
 * humid when cooler, louder by day).
 */
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const WEEK = 7 * 24 * HOUR

// The demo network's cities (scripts/demo-world.ts) and the walkthrough's balcony, north and south.
const PLACES: [string, number, number][] = [
  ['balcony', BALCONY.latitude, BALCONY.longitude], ['Madrid', 40.4168, -3.7038], ['Manchester', 53.4808, -2.2426], ['Delhi', 28.6139, 77.209],
  ['Nairobi', -1.2921, 36.8219], ['Sydney', -33.8688, 151.2093], ['Buenos Aires', -34.6037, -58.3816], ['Mexico City', 19.4326, -99.1332], ['Tokyo', 35.6762, 139.6503]
]
const WEEKS = [Date.UTC(2026, 0, 12), Date.UTC(2026, 3, 13), Date.UTC(2026, 6, 13), Date.UTC(2026, 9, 12)]
const IDS = [...FIRMWARE_SENSORS.keys()]

/** The bands the generators keep to, tighter than what a sensor could read (PHYSICAL_RANGES). */
const BANDS: Partial<Record<Quantity, [number, number]>> = {
  temperature: [-15, 42], humidity: [30, 95], noise: [35, 80], pressure: [95, 103], rssi: [-90, -40], battery: [0, 100], eco2: [400, 2000], co2: [400, 2000]
}

/** Calls fn every step through a week, with the site's value of each sensor at that time. */
function week (site: Site, from: number, step: number, fn: (at: number, value: (id: number) => number) => void): void {
  for (let at = from; at < from + WEEK; at += step) {
    const values = new Map<number, number>()
    fn(at, (id) => values.get(id) ?? values.set(id, sensorValue(id, at, site)).get(id) ?? NaN)
  }
}

t.test('every sensor stays inside its physical range, in every season, at every place', async (t) => {
  let checked = 0
  const outside: string[] = []
  for (const [name, latitude, longitude] of PLACES) {
    for (const [w, from] of WEEKS.entries()) {
      const site = { latitude, longitude, seed: seedOf(`${name}/${w}`) }
      week(site, from, 20 * MINUTE, (at, value) => {
        for (const id of IDS) {
          const v = value(id)
          const quantity = quantityOfSensor(id)
          const { min, max } = PHYSICAL_RANGES[quantity]
          const [low, high] = BANDS[quantity] ?? [min, max]
          checked++
          if (!(Number.isFinite(v) && v >= Math.max(min, low) && v <= Math.min(max, high))) outside.push(`${name} ${new Date(at).toISOString()} sensor ${id} (${quantity}): ${v}`)
        }
        // The dust sizes nest: the finer fraction is part of the coarser one.
        const ordered = (ids: number[]): boolean => ids.every((id, i) => i === 0 || value(ids[i - 1] ?? id) <= value(id))
        if (!ordered([89, 87, 88]) || !ordered([182, 183, 184, 185])) outside.push(`${name} ${new Date(at).toISOString()}: PM1 <= PM2.5 <= PM10 broken`)
        if (!ordered([170, 169, 168, 167, 166, 165]) || !ordered([190, 189, 188, 187, 186])) outside.push(`${name} ${new Date(at).toISOString()}: particle counts not decreasing with size`)
        if (![0, 1].includes(value(221))) outside.push(`${name}: SD card ${value(221)}`)
      })
    }
  }
  t.same(outside.slice(0, 20), [], `${checked} values, none outside (${outside.length} found)`)
})

t.test('the firmware\'s digits: integers where it prints integers, 2 decimals otherwise', async (t) => {
  const site = { ...BALCONY, seed: 7 }
  for (const [id, spec] of FIRMWARE_SENSORS) {
    const values = Array.from({ length: 200 }, (_, i) => sensorValue(id, (WEEKS[0] ?? 0) + i * 37 * MINUTE, site))
    t.ok(values.every((v) => Math.abs(v * 10 ** spec.decimals - Math.round(v * 10 ** spec.decimals)) < 1e-6), `sensor ${id}: ${spec.decimals} decimals`)
  }
})

t.test('a kit without a battery reads -1, as the firmware sends it', async (t) => {
  const site = { ...BALCONY, seed: 1, battery: false }
  week(site, WEEKS[1] ?? 0, HOUR, (at, value) => { if (value(10) !== -1) t.fail(`battery ${value(10)} at ${at}`) })
  t.equal(sensorValue(10, WEEKS[1] ?? 0, { ...BALCONY, seed: 1 }) >= 0, true, 'and one with a battery a percentage')
})

t.test('the balcony in Barcelona: between about 0 and 35 ºC all year, as the city is', async (t) => {
  const site = { ...BALCONY, seed: seedOf('balcony') }
  let min = Infinity
  let max = -Infinity
  for (let at = Date.UTC(2026, 0, 1); at < Date.UTC(2027, 0, 1); at += HOUR) {
    const v = sensorValue(55, at, site)
    min = Math.min(min, v)
    max = Math.max(max, v)
  }
  t.ok(min >= 0 && min <= 8, `coldest hour ${min} ºC`)
  t.ok(max >= 26 && max <= 35, `warmest hour ${max} ºC`)
})

t.test('daily cycles over a week, by local solar time', async (t) => {
  for (const [name, latitude, longitude] of PLACES) {
    for (const [w, from] of WEEKS.entries()) {
      const site = { latitude, longitude, seed: seedOf(`cycles ${name}/${w}`) }
      const byHour = Array.from({ length: 24 }, () => ({ n: 0, temperature: 0, noise: 0, light: 0 }))
      const temperature: number[] = []
      const humidity: number[] = []
      let darkButLit = 0
      let darkHours = 0
      week(site, from, 15 * MINUTE, (at, value) => {
        const hour = byHour[Math.floor(solarHour(at, longitude))]
        if (hour === undefined) return
        hour.n++
        hour.temperature += value(55)
        hour.noise += value(53)
        hour.light += value(14)
        temperature.push(value(55))
        humidity.push(value(56))
        if (sunHeight(at, site) <= 0) {
          darkHours++
          if (value(14) !== 0) darkButLit++
        }
      })
      const mean = (key: 'temperature' | 'noise' | 'light', from: number, to: number): number => {
        const hours = byHour.slice(from, to)
        return hours.reduce((sum, h) => sum + h[key] / h.n, 0) / hours.length
      }
      const hourly = byHour.map((h) => h.temperature / h.n)
      const warmest = hourly.indexOf(Math.max(...hourly))
      const at = `${name}, week of ${new Date(from).toISOString().slice(0, 10)}`
      t.ok(darkHours > 0 && darkButLit === 0, `${at}: light is 0 whenever the sun is down (${darkHours} dark samples)`)
      t.equal(mean('light', 22, 24) + mean('light', 0, 2), 0, `${at}: no light from 22:00 to 2:00 local time`)
      t.ok(mean('light', 11, 14) > 1000, `${at}: over 1000 lux around noon (${Math.round(mean('light', 11, 14))})`)
      t.ok(warmest >= 13 && warmest <= 17, `${at}: warmest at ${warmest}:00, mid-afternoon`)
      t.ok(mean('temperature', 13, 17) - mean('temperature', 3, 7) > 3, `${at}: afternoons warmer than dawns`)
      t.ok(correlation(temperature, humidity) < -0.6, `${at}: humidity falls as temperature rises (r = ${correlation(temperature, humidity).toFixed(2)})`)
      t.ok(mean('noise', 10, 18) - mean('noise', 1, 5) > 12, `${at}: louder by day (${mean('noise', 10, 18).toFixed(1)} against ${mean('noise', 1, 5).toFixed(1)} dBA at night)`)
    }
  }
})

t.test('deterministic given the site: the same seed gives the same values, another seed other weather', async (t) => {
  const from = WEEKS[2] ?? 0
  const series = (seed: number): number[] => IDS.flatMap((id) => Array.from({ length: 48 }, (_, i) => sensorValue(id, from + i * HOUR, { ...BALCONY, seed })))
  t.same(series(42), series(42))
  t.not(JSON.stringify(series(42)), JSON.stringify(series(43)))
  t.equal(seedOf('3f9a1c'), seedOf('3f9a1c'))
  t.not(seedOf('3f9a1c'), seedOf('3f9a1d'))
})

t.test('sensors map to generators by their catalogue measurement and unit', async (t) => {
  const { sql } = await createTestDatabase(t)
  const rows = await sql<{ id: number, measurement_id: number | null, unit: string | null }[]>`select id, measurement_id, unit from sensors order by id`
  const catalogue = new Map(rows.map((row) => [row.id, { measurementId: row.measurement_id, unit: row.unit }]))
  for (const [id, spec] of FIRMWARE_SENSORS) {
    t.same({ measurementId: spec.measurementId, unit: spec.unit }, catalogue.get(id), `sensor ${id} as the seeded catalogue has it`)
  }
  t.equal(catalogue.get(58)?.unit, 'kPa', 'pressure is in kPa (MPL3115A2)')
  t.equal(catalogue.get(227)?.unit, 'kPa', 'and in kPa (LPS33)')
  // Any catalogue sensor of a measurement the generators know, in a unit they know, gets one.
  t.match(quantityOf(catalogue.get(4) ?? { measurementId: null, unit: null }), { quantity: 'temperature', factor: 1 }, 'the DHT22\'s temperature')
  t.equal(quantityOf({ measurementId: 25, unit: 'hPa' })?.factor, 10, 'a pressure in hPa is scaled')
  t.equal(quantityOf({ measurementId: 3, unit: '%' }), undefined, 'a light level in % (an LDR) has no generator')
  t.equal(quantityOf({ measurementId: null, unit: null }), undefined)
  t.throws(() => sensorValue(9999, 0, { ...BALCONY, seed: 0 }), /no generator for sensor 9999/)
})

function correlation (xs: number[], ys: number[]): number {
  const mean = (vs: number[]): number => vs.reduce((a, b) => a + b, 0) / vs.length
  const mx = mean(xs)
  const my = mean(ys)
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (const [i, x] of xs.entries()) {
    const y = ys[i] ?? my
    sxy += (x - mx) * (y - my)
    sxx += (x - mx) ** 2
    syy += (y - my) ** 2
  }
  return sxy / Math.sqrt(sxx * syy)
}
