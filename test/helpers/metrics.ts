/**
 * The value of one series in a Prometheus text exposition: `name` with exactly the given labels
 * among its own (others may be present); undefined when no such line exists.
 */
export function sample (text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = new Map<string, string>()
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found.set(pair[1] ?? '', pair[2] ?? '')
    if (Object.entries(labels).every(([key, value]) => found.get(key) === value)) return Number(match[3])
  }
  return undefined
}
