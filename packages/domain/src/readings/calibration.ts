/**
 * Calibration equations in x, as the catalogue stores them (Ruby expressions such as
 * `(175.72 / 65536.0 * x) - 53`, or `Mathematician.table_calibration({0=>50,2=>55,...},x)`).
 * Parsed into a function once, never evaluated as code.
 */
export type Calibration = (x: number) => number

type Token = { kind: 'num', value: number } | { kind: 'x' } | { kind: 'op', value: string } | { kind: 'table', points: [number, number][] }

const TABLE = /^Mathematician\.table_calibration\(\{([^}]*)\},\s*x\s*\)/

function tokenize (source: string): Token[] {
  const tokens: Token[] = []
  let rest = source.trim()
  while (rest.length > 0) {
    const table = TABLE.exec(rest)
    if (table !== null) {
      const points = (table[1] ?? '').split(',').map((pair) => pair.split('=>').map((n) => Number(n.trim())) as [number, number])
      if (points.length === 0 || points.some(([a, b]) => !Number.isFinite(a) || !Number.isFinite(b))) throw new Error('bad calibration table')
      tokens.push({ kind: 'table', points: points.sort((a, b) => a[0] - b[0]) })
      rest = rest.slice(table[0].length).trimStart()
      continue
    }
    const number = /^\d+(\.\d+)?([eE][-+]?\d+)?/.exec(rest)
    if (number !== null) { tokens.push({ kind: 'num', value: Number(number[0]) }); rest = rest.slice(number[0].length).trimStart(); continue }
    if (rest.startsWith('**')) { tokens.push({ kind: 'op', value: '**' }); rest = rest.slice(2).trimStart(); continue }
    const c = rest[0] ?? ''
    if (c === 'x') tokens.push({ kind: 'x' })
    else if ('+-*/()^'.includes(c)) tokens.push({ kind: 'op', value: c === '^' ? '**' : c })
    else throw new Error(`unexpected ${JSON.stringify(c)} in calibration ${JSON.stringify(source)}`)
    rest = rest.slice(1).trimStart()
  }
  return tokens
}

/** Linear interpolation in a sorted table, clamped at both ends (the established platform's rule). */
function interpolate (points: [number, number][], x: number): number {
  const first = points[0]
  const last = points[points.length - 1]
  if (first === undefined || last === undefined) return x
  if (x <= first[0]) return first[1]
  if (x >= last[0]) return last[1]
  for (let i = 1; i < points.length; i++) {
    const [x1, y1] = points[i] ?? last
    const [x0, y0] = points[i - 1] ?? first
    if (x <= x1) return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
  }
  return last[1]
}

/** Recursive descent: sum := product (('+'|'-') product)*; product := power (('*'|'/') power)*; power := unary ('**' power)? */
export function compileCalibration (source: string): Calibration {
  const tokens = tokenize(source)
  let at = 0
  const peek = (): Token | undefined => tokens[at]
  const isOp = (value: string): boolean => { const t = peek(); return t?.kind === 'op' && t.value === value }
  type Node = (x: number) => number
  const sum = (): Node => {
    let left = product()
    while (isOp('+') || isOp('-')) {
      const minus = isOp('-'); at++
      const l = left; const r = product()
      left = minus ? (x) => l(x) - r(x) : (x) => l(x) + r(x)
    }
    return left
  }
  const product = (): Node => {
    let left = power()
    while (isOp('*') || isOp('/')) {
      const divide = isOp('/'); at++
      const l = left; const r = power()
      left = divide ? (x) => l(x) / r(x) : (x) => l(x) * r(x)
    }
    return left
  }
  const power = (): Node => {
    const base = unary()
    if (!isOp('**')) return base
    at++
    const exponent = power()
    return (x) => base(x) ** exponent(x)
  }
  const unary = (): Node => {
    if (isOp('-')) { at++; const inner = unary(); return (x) => -inner(x) }
    if (isOp('+')) { at++; return unary() }
    const token = peek()
    at++
    if (token === undefined) throw new Error(`calibration ${JSON.stringify(source)} ends too early`)
    if (token.kind === 'num') { const v = token.value; return () => v }
    if (token.kind === 'x') return (x) => x
    if (token.kind === 'table') { const points = token.points; return (x) => interpolate(points, x) }
    if (token.value === '(') {
      const inner = sum()
      if (!isOp(')')) throw new Error(`unbalanced parentheses in ${JSON.stringify(source)}`)
      at++
      return inner
    }
    throw new Error(`unexpected ${token.value} in calibration ${JSON.stringify(source)}`)
  }
  const root = sum()
  if (at !== tokens.length) throw new Error(`trailing input in calibration ${JSON.stringify(source)}`)
  return root
}

const cache = new Map<string, Calibration | null>()

/** The compiled equation, or null for none or one that cannot be parsed (then value = raw_value). */
export function calibrationFor (equation: string | null | undefined): Calibration | null {
  if (equation === null || equation === undefined || equation.trim() === '' || equation.trim() === 'x') return null
  let compiled = cache.get(equation)
  if (compiled === undefined) {
    try { compiled = compileCalibration(equation) } catch { compiled = null }
    cache.set(equation, compiled)
  }
  return compiled
}
