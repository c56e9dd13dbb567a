import type { CompactMap, MapPoint } from './types.js'

const CONDITIONS: Readonly<Record<string, MapPoint['condition']>> = { o: 'online', f: 'offline', n: 'new' }

/** The compact map's columns as the map's points, in the order the API sent them (by id). */
export function decodeCompactMap (map: CompactMap): MapPoint[] {
  const points: MapPoint[] = []
  let id = 0
  for (let i = 0; i < map.count; i++) {
    id += map.id[i] ?? 0
    points.push({
      id,
      name: map.name[i] ?? '',
      latitude: (map.lat[i] ?? 0) / 1e5,
      longitude: (map.lng[i] ?? 0) / 1e5,
      condition: CONDITIONS[map.condition.charAt(i)] ?? 'offline',
      exposure: map.exposure.charAt(i) === 'i' ? 'indoor' : 'outdoor',
      value: map.value?.[i] ?? null
    })
  }
  return points
}
