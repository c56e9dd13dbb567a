/**
 * Believable readings for the scripts that make data (`pnpm simulate`, `pnpm demo`): what a Smart
 * Citizen Kit outdoors would read at a place and a time. Each value is a pure function of the
 * sensor, the time and the site (its place and a seed), so a test can compute again what a script
 * sent. The weather is smooth noise drawn from the seed; the sun, the seasons and people's days give
 * the cycles: temperature peaks mid-afternoon (local solar time) and humidity falls as it rises,
 * light is 0 while the sun is below the horizon, noise and eCO2 follow traffic. Sensors are matched
 * by their catalogue measurement and unit (packages/db/src/seed/catalogue-data.ts), and the sensor
 * ids a kit sends are the firmware's (clients.md §1.3.1).
 */

/** Where a kit is, and the seed of its weather and of its own offsets (Wi-Fi link, dust level). */
export interface Site {
  latitude: number
  longitude: number
  seed: number
  /** false: a kit without a battery, which the firmware reports as -1 (clients.md §1.3.1) */
  battery?: boolean
}

/** The README's balcony in Barcelona: the place of a kit that says nothing about its own. */
export const BALCONY = { latitude: 41.38879, longitude: 2.15899 }

export type Quantity =
  | 'temperature' | 'humidity' | 'light' | 'noise' | 'pressure'
  | 'pm1' | 'pm2.5' | 'pm4' | 'pm10'
  | 'pn0.3' | 'pn0.5' | 'pn1' | 'pn2.5' | 'pn4' | 'pn5' | 'pn10'
  | 'eco2' | 'tvoc' | 'co2' | 'battery' | 'battery_voltage' | 'rssi' | 'sd_card'

/**
 * What a kit can read of each quantity, in the unit the generators produce: the sensors' own
 * limits where they have them (CCS811: eCO2 400–8192 ppm, TVOC 0–1187 ppb; SCD30 from 400 ppm),
 * otherwise what the air at the Earth's surface can hold. A battery reads -1 when none is fitted.
 */
export const PHYSICAL_RANGES: Record<Quantity, { unit: string, min: number, max: number }> = {
  temperature: { unit: 'ºC', min: -30, max: 50 },
  humidity: { unit: '%', min: 0, max: 100 },
  light: { unit: 'lux', min: 0, max: 120_000 },
  noise: { unit: 'dBA', min: 30, max: 120 },
  pressure: { unit: 'kPa', min: 87, max: 108 },
  pm1: { unit: 'ug/m3', min: 0, max: 1000 },
  'pm2.5': { unit: 'ug/m3', min: 0, max: 1000 },
  pm4: { unit: 'ug/m3', min: 0, max: 1000 },
  pm10: { unit: 'ug/m3', min: 0, max: 1000 },
  'pn0.3': { unit: '#/0.1l', min: 0, max: 100_000 },
  'pn0.5': { unit: '#/0.1l', min: 0, max: 100_000 },
  pn1: { unit: '#/0.1l', min: 0, max: 100_000 },
  'pn2.5': { unit: '#/0.1l', min: 0, max: 100_000 },
  pn4: { unit: '#/0.1l', min: 0, max: 100_000 },
  pn5: { unit: '#/0.1l', min: 0, max: 100_000 },
  pn10: { unit: '#/0.1l', min: 0, max: 100_000 },
  eco2: { unit: 'ppm', min: 400, max: 8192 },
  tvoc: { unit: 'ppb', min: 0, max: 1187 },
  co2: { unit: 'ppm', min: 400, max: 10_000 },
  battery: { unit: '%', min: -1, max: 100 },
  battery_voltage: { unit: 'V', min: 0, max: 4.3 },
  rssi: { unit: 'dBm', min: -100, max: -20 },
  sd_card: { unit: '', min: 0, max: 1 }
}

/** Catalogue measurement ids (seed/catalogue-data.ts `measurements`) and what they measure. */
const MEASUREMENTS: Record<number, Quantity> = {
  1: 'temperature',
  2: 'humidity',
  3: 'light',
  4: 'noise',
  7: 'battery',
  11: 'battery_voltage',
  13: 'pm10',
  14: 'pm2.5',
  25: 'pressure',
  27: 'pm1',
  46: 'eco2',
  47: 'tvoc',
  106: 'co2',
  107: 'pm4',
  108: 'pn0.3',
  109: 'pn0.5',
  110: 'pn1',
  111: 'pn2.5',
  112: 'pn4',
  113: 'pn5',
  114: 'pn10',
  122: 'rssi',
  123: 'sd_card'
}

/** Units a catalogue sensor may report a quantity in, as a factor of the generators' unit. */
const UNITS: Partial<Record<Quantity, Record<string, number>>> = {
  temperature: { ºC: 1 },
  humidity: { '%': 1 },
  light: { lux: 1 },
  noise: { dBA: 1, dB: 1 },
  pressure: { kPa: 1, hPa: 10, mbar: 10, Pa: 1000 }
}

export interface SensorSpec { measurementId: number, unit: string | null, decimals: number }

/**
 * The sensors the SCK 2.x firmware sends (clients.md §1.3.1), with their catalogue measurement and
 * unit (test/scripts/sensor-values.test.ts holds them against the seeded catalogue) and the digits
 * the firmware prints: Arduino's `String()` gives floats 2 decimals, and the sensors that count
 * (battery, RSSI, light, the CCS811's ppm and ppb, the PMS5003's µg/m³ and particles) are integers.
 */
export const FIRMWARE_SENSORS: ReadonlyMap<number, SensorSpec> = new Map([
  [10, { measurementId: 7, unit: '%', decimals: 0 }],
  [221, { measurementId: 123, unit: null, decimals: 0 }],
  [220, { measurementId: 122, unit: 'dBm', decimals: 0 }],
  [14, { measurementId: 3, unit: 'lux', decimals: 0 }],
  [55, { measurementId: 1, unit: 'ºC', decimals: 2 }],
  [56, { measurementId: 2, unit: '%', decimals: 2 }],
  [53, { measurementId: 4, unit: 'dBA', decimals: 2 }],
  [58, { measurementId: 25, unit: 'kPa', decimals: 2 }],
  [227, { measurementId: 25, unit: 'kPa', decimals: 2 }],
  [113, { measurementId: 47, unit: 'ppb', decimals: 0 }],
  [112, { measurementId: 46, unit: 'ppm', decimals: 0 }],
  [89, { measurementId: 27, unit: 'ug/m3', decimals: 0 }],
  [87, { measurementId: 14, unit: 'ug/m3', decimals: 0 }],
  [88, { measurementId: 13, unit: 'ug/m3', decimals: 0 }],
  [165, { measurementId: 108, unit: '#/0.1l', decimals: 0 }],
  [166, { measurementId: 109, unit: '#/0.1l', decimals: 0 }],
  [167, { measurementId: 110, unit: '#/0.1l', decimals: 0 }],
  [168, { measurementId: 111, unit: '#/0.1l', decimals: 0 }],
  [169, { measurementId: 113, unit: '#/0.1l', decimals: 0 }],
  [170, { measurementId: 114, unit: '#/0.1l', decimals: 0 }],
  [182, { measurementId: 27, unit: 'ug/m3', decimals: 2 }],
  [183, { measurementId: 14, unit: 'ug/m3', decimals: 2 }],
  [184, { measurementId: 107, unit: 'ug/m3', decimals: 2 }],
  [185, { measurementId: 13, unit: 'ug/m3', decimals: 2 }],
  [186, { measurementId: 109, unit: '#/0.1l', decimals: 2 }],
  [187, { measurementId: 110, unit: '#/0.1l', decimals: 2 }],
  [188, { measurementId: 111, unit: '#/0.1l', decimals: 2 }],
  [189, { measurementId: 112, unit: '#/0.1l', decimals: 2 }],
  [190, { measurementId: 114, unit: '#/0.1l', decimals: 2 }],
  [158, { measurementId: 106, unit: 'ppm', decimals: 2 }],
  [222, { measurementId: 11, unit: 'V', decimals: 2 }]
])

/** What a catalogue sensor measures and the factor to its unit; undefined when no generator fits. */
export function quantityOf (sensor: { measurementId: number | null, unit: string | null }): { quantity: Quantity, factor: number } | undefined {
  const quantity = sensor.measurementId === null ? undefined : MEASUREMENTS[sensor.measurementId]
  if (quantity === undefined) return undefined
  const units = UNITS[quantity]
  if (units === undefined) return { quantity, factor: 1 }
  const factor = sensor.unit === null ? undefined : units[sensor.unit]
  return factor === undefined ? undefined : { quantity, factor }
}

type Generated = SensorSpec & { quantity: Quantity, factor: number }
const generated = new Map<number, Generated>()

function firmwareSensor (sensorId: number): Generated {
  const known = generated.get(sensorId)
  if (known !== undefined) return known
  const spec = FIRMWARE_SENSORS.get(sensorId)
  const measured = spec === undefined ? undefined : quantityOf(spec)
  if (spec === undefined || measured === undefined) throw new Error(`no generator for sensor ${sensorId}`)
  generated.set(sensorId, { ...spec, ...measured })
  return { ...spec, ...measured }
}

/** The quantity a firmware sensor id measures (for range checks of what the API answers). */
export function quantityOfSensor (sensorId: number): Quantity {
  return firmwareSensor(sensorId).quantity
}

/** A firmware sensor's value at a time, rounded to the digits the firmware prints. */
export function sensorValue (sensorId: number, at: number, site: Site): number {
  const sensor = firmwareSensor(sensorId)
  return round(quantityValue(sensor.quantity, at, site) * sensor.factor, sensor.decimals)
}

/** A firmware sensor's value as the firmware prints it in a raw message (clients.md §1.3.1). */
export function firmwareText (sensorId: number, value: number): string {
  return value.toFixed(FIRMWARE_SENSORS.get(sensorId)?.decimals ?? 2)
}

const HOUR = 3_600_000
const DAY = 24 * HOUR
const YEAR_DAYS = 365.2425
const TAU = 2 * Math.PI
const RADIANS = Math.PI / 180

function round (value: number, decimals: number): number {
  const scale = 10 ** decimals
  return Math.round(value * scale) / scale
}

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value))

/** murmur3's finaliser: a well-mixed 32-bit hash, so nearby seeds and steps look unrelated. */
function mix (value: number): number {
  let h = value | 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/** A uniform number in [0, 1) for a seed, a channel (one per kind of weather) and a step. */
function uniform (seed: number, channel: number, step: number): number {
  return mix(mix(mix(seed) ^ Math.imul(channel, 0x9e3779b1)) ^ step) / 2 ** 32
}

/** Smooth noise in [-1, 1]: random levels every `period` ms, eased from one to the next. */
function drift (site: Site, channel: number, at: number, period: number): number {
  const x = at / period
  const i = Math.floor(x)
  const f = x - i
  const eased = f * f * (3 - 2 * f)
  const a = uniform(site.seed, channel, i) * 2 - 1
  const b = uniform(site.seed, channel, i + 1) * 2 - 1
  return a + (b - a) * eased
}

/** A fixed draw in [0, 1) of the site: its own offsets. */
const trait = (site: Site, channel: number): number => uniform(site.seed, channel, -1)

/** Hours since local solar midnight, from the longitude (what the sun and people follow). */
export function solarHour (at: number, longitude: number): number {
  return (((at % DAY) / HOUR + longitude / 15) % 24 + 24) % 24
}

/** Days since the start of the year (UTC), fractional. */
const dayOfYear = (at: number): number => ((at / DAY) % YEAR_DAYS + YEAR_DAYS) % YEAR_DAYS

/** The sine of the sun's elevation: below 0 it is night. */
export function sunHeight (at: number, site: Pick<Site, 'latitude' | 'longitude'>): number {
  const declination = -23.44 * RADIANS * Math.cos(TAU * (dayOfYear(at) + 10) / YEAR_DAYS)
  const hourAngle = (solarHour(at, site.longitude) - 12) * 15 * RADIANS
  const latitude = site.latitude * RADIANS
  return Math.sin(latitude) * Math.sin(declination) + Math.cos(latitude) * Math.cos(declination) * Math.cos(hourAngle)
}

/** 0 at night, 1 through the day: traffic and people, behind noise, eCO2 and some dust. */
function activity (at: number, site: Site): number {
  const h = solarHour(at, site.longitude)
  const logistic = (x: number): number => 1 / (1 + Math.exp(-x))
  return logistic((h - 6.5) / 0.8) * logistic((22.5 - h) / 1)
}

/** 0 clear, 1 overcast. */
const cloudCover = (at: number, site: Site): number => 0.5 + 0.5 * (0.7 * drift(site, 1, at, 36 * HOUR) + 0.3 * drift(site, 2, at, 7 * HOUR))

/** The mean temperature of a day here: colder away from the equator, with the seasons. */
function dailyMeanTemperature (at: number, site: Site): number {
  const latitude = Math.abs(site.latitude)
  // The warmest days come about a month after the June solstice in the north, in January in the south.
  const season = Math.cos(TAU * (dayOfYear(at) - 200) / YEAR_DAYS) * Math.sign(site.latitude)
  return 28 - 0.28 * latitude + 0.15 * latitude * season + 2 * drift(site, 3, at, 60 * HOUR)
}

function temperature (at: number, site: Site): number {
  // Clear days swing more than overcast ones; the warmest hour is mid-afternoon.
  const swing = 3 + 3 * (1 - cloudCover(at, site))
  return dailyMeanTemperature(at, site) + swing * Math.cos(TAU * (solarHour(at, site.longitude) - 15) / 24)
}

function humidity (at: number, site: Site): number {
  const mean = dailyMeanTemperature(at, site)
  const annual = 28 - 0.28 * Math.abs(site.latitude)
  // Relative humidity falls as the same air warms through the day, and rises under cloud.
  return clamp(64 - 2.4 * (temperature(at, site) - mean) - 0.5 * (mean - annual) + 14 * (cloudCover(at, site) - 0.5), 30, 95)
}

function pm25 (at: number, site: Site): number {
  const level = 6 + 10 * trait(site, 10)
  return level * Math.exp(0.6 * drift(site, 11, at, 72 * HOUR)) * (0.85 + 0.3 * activity(at, site))
}

/** Particles above each size in 0.1 l, as fractions of those above 0.3 µm (fewer as they grow). */
const PARTICLES: Partial<Record<Quantity, number>> = { 'pn0.3': 1, 'pn0.5': 0.3, pn1: 0.055, 'pn2.5': 0.006, pn4: 0.002, pn5: 0.0012, pn10: 0.0003 }

function eco2 (at: number, site: Site): number {
  return 400 + 250 * activity(at, site) * (0.5 + 0.5 * drift(site, 20, at, 5 * HOUR)) + 15 * (1 + drift(site, 21, at, HOUR))
}

function batteryLevel (at: number, site: Site): number {
  // Charged by day (a solar panel, or a plug used by day), lowest before dawn.
  return clamp(80 + 15 * Math.cos(TAU * (solarHour(at, site.longitude) - 17) / 24) + 4 * drift(site, 30, at, 48 * HOUR), 0, 100)
}

/** A quantity's value at a time and place, in the unit of PHYSICAL_RANGES, unrounded. */
export function quantityValue (quantity: Quantity, at: number, site: Site): number {
  switch (quantity) {
    case 'temperature': return temperature(at, site)
    case 'humidity': return humidity(at, site)
    case 'light': {
      // Up to 30,000 lux in the kit's case under a high sun, a quarter of it under cloud.
      const sun = sunHeight(at, site)
      return sun <= 0 ? 0 : 30_000 * sun ** 1.2 * (1 - 0.75 * cloudCover(at, site))
    }
    case 'noise': return 40 + 22 * activity(at, site) + 5 * (0.7 * drift(site, 40, at, HOUR) + 0.3 * drift(site, 41, at, 10 * 60_000))
    case 'pressure':
      // Weather systems over days, and the small twice-daily atmospheric tide (highs near 10:00 and 22:00).
      return 101.3 + 1.1 * drift(site, 50, at, 96 * HOUR) + 0.1 * Math.cos(TAU * (solarHour(at, site.longitude) - 10) / 12)
    case 'pm2.5': return pm25(at, site)
    // The shares of finer and coarser dust move slowly; PM1 ≤ PM2.5 ≤ PM4 ≤ PM10 always.
    case 'pm1': return pm25(at, site) * (0.6 + 0.1 * drift(site, 12, at, 24 * HOUR))
    case 'pm4': return pm25(at, site) * (1.1 + 0.05 * drift(site, 13, at, 24 * HOUR))
    case 'pm10': return pm25(at, site) * (1.35 + 0.15 * drift(site, 14, at, 24 * HOUR))
    case 'pn0.3': case 'pn0.5': case 'pn1': case 'pn2.5': case 'pn4': case 'pn5': case 'pn10':
      return 120 * pm25(at, site) * (PARTICLES[quantity] ?? 0)
    case 'eco2': return eco2(at, site)
    // The CCS811 derives both from one reading: TVOC rises with eCO2.
    case 'tvoc': return 0.35 * (eco2(at, site) - 400) + 5 * (1 + drift(site, 22, at, 2 * HOUR))
    case 'co2': return 420 + 80 * activity(at, site) + 12 * (1 + drift(site, 23, at, 3 * HOUR))
    case 'battery': return site.battery === false ? -1 : batteryLevel(at, site)
    case 'battery_voltage': return site.battery === false ? 0 : 3.3 + 0.9 * batteryLevel(at, site) / 100
    case 'rssi': return clamp(-52 - 28 * trait(site, 60) + 6 * drift(site, 61, at, 20 * 60_000), -90, -40)
    case 'sd_card': return trait(site, 70) < 0.85 ? 1 : 0
  }
}

/** A 32-bit seed from a text (a device token, a name). */
export function seedOf (text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return mix(h)
}
