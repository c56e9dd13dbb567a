// The legend of an interpolated grid (issue 38): at most seven classes with rounded bounds over its
// values, coloured along viridis.

export interface LegendClass { from: number, to: number, color: string }

/** Viridis (matplotlib) at 0, 1/8, …, 1: sequential and colour-blind safe. */
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725']
  .map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number])
const MAX_CLASSES = 7
/** Nice steps are these × 10^k, written ×10 so that bounds are integers times a power of ten. */
const NICE_TENS = [10, 20, 25, 50]

function viridis (t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1)
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x))
  const a = VIRIDIS[i] as [number, number, number]
  const b = VIRIDIS[i + 1] as [number, number, number]
  const f = x - i
  return '#' + a.map((from, k) => Math.round(from + ((b[k] as number) - from) * f).toString(16).padStart(2, '0')).join('')
}

/** n × 10^exp as the double nearest the decimal (dividing by an exact power of ten rounds once). */
const decimal = (n: number, exp: number): number => exp >= 0 ? n * 10 ** exp : n / 10 ** -exp

function withColours (bounds: number[]): LegendClass[] {
  const n = bounds.length - 1
  const classes: LegendClass[] = []
  for (let i = 0; i < n; i++) {
    classes.push({ from: bounds[i] as number, to: bounds[i + 1] as number, color: viridis(n === 1 ? 0.5 : i / (n - 1)) })
  }
  return classes
}

/**
 * At most 7 classes over [min, max] of the finite values, bounds on the smallest "nice" step
 * (1, 2, 2.5 or 5 × 10^k) that needs no more; colours along viridis. Classes are [from, to),
 * the last one [from, to].
 */
export function legendClasses (values: Float64Array): LegendClass[] {
  let min = Infinity
  let max = -Infinity
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number
    if (v - v !== 0) continue
    if (v < min) min = v
    if (v > max) max = v
  }
  if (min > max) return []
  if (min === max) return withColours([min, max])
  const range = max - min
  let exp = Math.floor(Math.log10(range / MAX_CLASSES)) - 2
  if (!Number.isFinite(range) || exp < -300 || exp > 300) {
    // Beyond what decimal steps can express: equal classes, still covering min and max exactly.
    const bounds = Array.from({ length: MAX_CLASSES + 1 }, (_, i) => min + (max / MAX_CLASSES - min / MAX_CLASSES) * i)
    bounds[MAX_CLASSES] = max
    return withColours(bounds)
  }
  // Starting below the estimate (log10 rounds) and walking up the nice steps finds the smallest.
  for (let i = 0; ; i++) {
    if (i === NICE_TENS.length) { i = 0; exp++ }
    const tens = NICE_TENS[i] as number
    const bound = (k: number): number => decimal(k * tens, exp - 1)
    const step = decimal(tens, exp - 1)
    let lo = Math.floor(min / step)
    while (bound(lo) > min) lo--
    while (bound(lo + 1) <= min) lo++
    let hi = Math.ceil(max / step)
    while (bound(hi) < max) hi++
    while (bound(hi - 1) >= max) hi--
    if (hi - lo > MAX_CLASSES) continue
    const bounds: number[] = []
    for (let k = lo; k <= hi; k++) bounds.push(bound(k))
    return withColours(bounds)
  }
}

/** The index of the class holding value, -1 for NaN or a value outside them all. */
export function classOf (classes: LegendClass[], value: number): number {
  if (Number.isNaN(value)) return -1
  const last = classes.length - 1
  for (let i = 0; i <= last; i++) {
    const c = classes[i] as LegendClass
    if (value < c.from) return -1
    if (value < c.to || (i === last && value <= c.to)) return i
  }
  return -1
}
