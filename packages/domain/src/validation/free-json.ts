/**
 * The one check for free JSON a caller hands the platform to keep (a device's `meta`, a status
 * message, a factory report): what PostgreSQL's jsonb refuses, or what would overflow the stack
 * when it is serialised, is the caller's mistake and must be a 4xx, never a failed query or a
 * RangeError. The walk is a loop, not a recursion, so a value 100,000 levels deep is measured
 * without overflowing the stack itself.
 */

/** Deeper than any real device document; JSON.stringify overflows Node's stack at a few thousand. */
export const FREE_JSON_MAX_DEPTH = 64

// A high surrogate not followed by a low one, or a low one not preceded by a high one. jsonb
// refuses both ("\ud800" escapes); lib ES2023 has no String.prototype.isWellFormed to type it.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why PostgreSQL cannot take `text` as text or jsonb (NUL, a lone surrogate), or null. */
export function textProblem (text: string): string | null {
  // jsonb cannot hold U+0000 at all
  if (text.includes('\u0000')) return 'must not contain NUL characters'
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (it holds a lone surrogate)'
  return null
}

/**
 * Why `value` cannot be stored as free JSON, or null when it can: nested deeper than `maxDepth`
 * (the top level is depth 1), or a string or key with NUL or a lone surrogate.
 */
export function freeJsonProblem (value: unknown, maxDepth = FREE_JSON_MAX_DEPTH): string | null {
  const stack: Array<[unknown, number]> = [[value, 1]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number]
    if (typeof item === 'string') {
      const problem = textProblem(item)
      if (problem !== null) return problem
      continue
    }
    if (item === null || typeof item !== 'object') continue
    if (depth > maxDepth) return `is nested too deeply (at most ${maxDepth} levels)`
    if (Array.isArray(item)) {
      for (const child of item) stack.push([child, depth + 1])
      continue
    }
    for (const key in item) {
      if (!Object.hasOwn(item, key)) continue
      const problem = textProblem(key)
      if (problem !== null) return problem
      stack.push([(item as Record<string, unknown>)[key], depth + 1])
    }
  }
  return null
}
