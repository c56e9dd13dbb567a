/**
 * A network to look at, made over HTTP as clients would: one account owns public devices in real
 * cities, one of them a kit of 12 sensors with a year of hourly readings (and a week missing, a gap
 * the charts must show), some online, some offline, one that never published. `pnpm demo` makes it
 * on a running platform; the explorer's browser tests and its benchmark start from it. It takes
 * about 50 requests, within a citizen's 90 a minute.
 */

/** A kit's sensors (clients.md §1.3.1) and a plausible level and swing for each. */
export const KIT_SENSORS: { id: number, base: number, daily: number, yearly: number, noise: number }[] = [
  { id: 55, base: 16, daily: 4, yearly: 9, noise: 0.4 }, // temperature, ºC
  { id: 56, base: 62, daily: -12, yearly: 8, noise: 2 }, // humidity, %
  { id: 58, base: 101.3, daily: 0.15, yearly: 0.3, noise: 0.05 }, // pressure, kPa
  { id: 14, base: 300, daily: 300, yearly: 100, noise: 20 }, // light, lux
  { id: 53, base: 55, daily: 8, yearly: 2, noise: 3 }, // noise, dBA
  { id: 87, base: 12, daily: 4, yearly: -5, noise: 2 }, // PM2.5
  { id: 88, base: 18, daily: 5, yearly: -6, noise: 3 }, // PM10
  { id: 89, base: 8, daily: 3, yearly: -3, noise: 1 }, // PM1
  { id: 10, base: 80, daily: 10, yearly: 0, noise: 1 }, // battery, %
  { id: 112, base: 450, daily: 80, yearly: 20, noise: 15 }, // eCO2, ppm
  { id: 113, base: 120, daily: 40, yearly: 10, noise: 8 }, // TVOC, ppb
  { id: 220, base: 20, daily: 5, yearly: 3, noise: 1 }
]

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

/** The value of a kit sensor at a time: a day's and a year's cycle and a little deterministic noise. */
export function kitValue (sensor: typeof KIT_SENSORS[number], ms: number): number {
  const day = (ms % 86_400_000) / 86_400_000
  const year = (ms % 31_536_000_000) / 31_536_000_000
  const jitter = Math.sin(ms / 3_600_000 * 12.9898 + sensor.id) * 43758.5453 % 1
  const value = sensor.base + sensor.daily * Math.sin(2 * Math.PI * (day - 0.375)) + sensor.yearly * Math.sin(2 * Math.PI * (year - 0.3)) + sensor.noise * jitter
  return Math.round(value * 100) / 100
}

/**
 * Makes the world on a started platform as this account (any role). `now` ends the year of
 * readings (the last reading is at most an hour old, so the kit is online).
 */
export async function makeExplorerWorld (base: string, owner: { username: string, password: string }, options: { now?: number, days?: number } = {}): Promise<ExplorerWorld> {
  const ownerToken = await logInAs(base, owner.username, owner.password)
  const devices: ExplorerWorld['devices'] = []
  for (const [city, latitude, longitude, name] of CITIES) {
    const created = await call<{ id: number }>(base, ownerToken, 'POST', '/devices', { name, exposure: devices.length % 4 === 3 ? 'indoor' : 'outdoor', latitude, longitude, description: `A citizen's kit in ${city}` })
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
  const post = async (deviceId: number, times: number[]): Promise<void> => {
    await call(base, ownerToken, 'POST', `/devices/${deviceId}/readings`, {
      data: times.map((at) => ({ recorded_at: new Date(at).toISOString(), sensors: KIT_SENSORS.map((s) => ({ id: s.id, value: kitValue(s, at) })) }))
    })
  }
  const times: number[] = []
  for (let at = start; at <= end; at += hour) if (at < gapFrom || at >= gapTo) times.push(at)
  for (let i = 0; i < times.length; i += 1000) await post(showcase.id, times.slice(i, i + 1000))
  // Online (a reading now), offline (days ago) and never published: the map's three colours.
  for (const [i, device] of devices.entries()) {
    if (i === 0 || i % 5 === 4) continue
    await post(device.id, [i % 3 === 0 ? now - (3 + i) * 24 * hour : now - 60_000])
  }
  return {
    ownerToken,
    showcase: { ...showcase, from: new Date(start).toISOString(), to: new Date(end).toISOString(), gap: { from: new Date(gapFrom).toISOString(), to: new Date(gapTo).toISOString() } },
    devices
  }
}
