/**
 * A network to look at, made over HTTP as clients would: one account owns public devices in real
 * cities, one of them a kit of 12 sensors with a year of hourly readings (and a week missing, a gap
 * the charts must show), some online, some offline, one that never published. `pnpm demo` makes it
 * on a running platform; the explorer's browser tests and its benchmark start from it. It takes
 * about 50 requests, within a citizen's 90 a minute.
 */

import { sensorValue, type Site } from './sensor-values.js'

/**
 * The kit's sensors (clients.md §1.3.1): temperature, humidity, pressure, light, noise, PM2.5, PM10,
 * PM1, battery, eCO2, TVOC and Wi-Fi RSSI. Their values come from scripts/sensor-values.ts, as
 * `pnpm simulate`'s do.
 */
export const KIT_SENSORS: { id: number }[] = [55, 56, 58, 14, 53, 87, 88, 89, 10, 112, 113, 220].map((id) => ({ id }))

const CITIES: [string, number, number, string][] = [
  ['Barcelona', 41.3874, 2.1686, 'Gràcia balcony'], ['Madrid', 40.4168, -3.7038, 'Lavapiés window'], ['Amsterdam', 52.3676, 4.9041, 'Canal house roof'],
  ['Berlin', 52.52, 13.405, 'Kreuzberg courtyard'], ['Paris', 48.8566, 2.3522, 'Belleville school'], ['London', 51.5072, -0.1276, 'Hackney allotment'],
  ['Lisbon', 38.7223, -9.1393, 'Alfama terrace'], ['Rome', 41.9028, 12.4964, 'Trastevere garden'], ['Athens', 37.9838, 23.7275, 'Exarchia rooftop'],
  ['New York', 40.7128, -74.006, 'Brooklyn fire escape'], ['Mexico City', 19.4326, -99.1332, 'Coyoacán patio'], ['São Paulo', -23.5558, -46.6396, 'Vila Madalena wall'],
  ['Nairobi', -1.2921, 36.8219, 'Kibera community centre'], ['Cape Town', -33.9249, 18.4241, 'Observatory stoep'], ['Delhi', 28.6139, 77.209, 'Lajpat Nagar roof'],
  ['Tokyo', 35.6762, 139.6503, 'Shimokitazawa balcony'], ['Sydney', -33.8688, 151.2093, 'Newtown backyard'], ['Seoul', 37.5665, 126.978, 'Mapo-gu window'],
  ['Buenos Aires', -34.6037, -58.3816, 'Palermo azotea'], ['Manchester', 53.4808, -2.2426, 'Ancoats mill']
]

export interface ExplorerWorld {
  ownerToken: string
  /** the kit with a year of hourly readings */
  showcase: { id: number, name: string, city: string, from: string, to: string, gap: { from: string, to: string } }
  devices: { id: number, name: string, city: string }[]
}

const json = { 'content-type': 'application/json' }

async function call<T> (base: string, token: string | null, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}/v0${path}`, {
    method,
    headers: { ...json, ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return (text === '' ? null : JSON.parse(text)) as T
}

export async function logInAs (base: string, username: string, password: string): Promise<string> {
  return (await call<{ access_token: string }>(base, null, 'POST', '/sessions', { username, password })).access_token
}

/** Where the showcase kit is (the first city): the place of kitValue when none is given. */
export const SHOWCASE_SITE: Site = { latitude: 41.3874, longitude: 2.1686, seed: 0 }

/** The value of a kit sensor at a time, at a device's site (by default the showcase's). */
export function kitValue (sensor: { id: number }, ms: number, site: Site = SHOWCASE_SITE): number {
  return sensorValue(sensor.id, ms, site)
}

/**
 * Makes the world on a started platform as this account (any role). `now` ends the year of
 * readings (the last reading is at most an hour old, so the kit is online).
 */
export async function makeExplorerWorld (base: string, owner: { username: string, password: string }, options: { now?: number, days?: number } = {}): Promise<ExplorerWorld> {
  const ownerToken = await logInAs(base, owner.username, owner.password)
  const devices: ExplorerWorld['devices'] = []
  // Each device's readings follow its own city's sun and seasons, and weather of its own.
  const sites: Site[] = []
  for (const [city, latitude, longitude, name] of CITIES) {
    const created = await call<{ id: number }>(base, ownerToken, 'POST', '/devices', { name, exposure: devices.length % 4 === 3 ? 'indoor' : 'outdoor', latitude, longitude, description: `A citizen's kit in ${city}` })
    sites.push({ latitude, longitude, seed: devices.length })
    devices.push({ id: created.id, name, city })
  }
  const now = options.now ?? Date.now()
  const hour = 3_600_000
  const end = Math.floor(now / hour) * hour
  const days = options.days ?? 365
  const start = end - days * 24 * hour
  const gapFrom = end - 60 * 24 * hour
  const gapTo = gapFrom + 7 * 24 * hour
  const showcase = devices[0]
  if (showcase === undefined) throw new Error('no devices made')
  const post = async (i: number, deviceId: number, times: number[]): Promise<void> => {
    const site = sites[i] ?? SHOWCASE_SITE
    await call(base, ownerToken, 'POST', `/devices/${deviceId}/readings`, {
      data: times.map((at) => ({ recorded_at: new Date(at).toISOString(), sensors: KIT_SENSORS.map((s) => ({ id: s.id, value: kitValue(s, at, site) })) }))
    })
  }
  const times: number[] = []
  for (let at = start; at <= end; at += hour) if (at < gapFrom || at >= gapTo) times.push(at)
  for (let i = 0; i < times.length; i += 1000) await post(0, showcase.id, times.slice(i, i + 1000))
  // Online (a reading now), offline (days ago) and never published: the map's three colours.
  for (const [i, device] of devices.entries()) {
    if (i === 0 || i % 5 === 4) continue
    await post(i, device.id, [i % 3 === 0 ? now - (3 + i) * 24 * hour : now - 60_000])
  }
  return {
    ownerToken,
    showcase: { ...showcase, from: new Date(start).toISOString(), to: new Date(end).toISOString(), gap: { from: new Date(gapFrom).toISOString(), to: new Date(gapTo).toISOString() } },
    devices
  }
}
