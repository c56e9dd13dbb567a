/**
 * What is made once per database handle (prepared statements, kept data) and lives as long as the
 * handle: a process may hold several databases, as the tests do, so a module-level value will not do.
 */
export function oncePer<K extends object, T> (make: (key: K) => T): (key: K) => T {
  const made = new WeakMap<K, T>()
  return (key) => {
    let value = made.get(key)
    if (value === undefined) made.set(key, value = make(key))
    return value
  }
}
