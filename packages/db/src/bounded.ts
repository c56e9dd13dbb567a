/**
 * Forgets a Map's first keys until it holds at most `max`. Callers re-insert a key on use, so the
 * first key is the least recently used one (or, without that, the oldest): the one eviction of
 * the platform's bounded memories (credentials, failed logins, known components, map bodies).
 */
export function trimOldest<K, V> (map: Map<K, V>, max: number): void {
  while (map.size > max) {
    const oldest = map.keys().next()
    if (oldest.done === true) return
    map.delete(oldest.value)
  }
}
