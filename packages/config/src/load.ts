import { type Static, type TObject } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

export class ConfigError extends Error {
  readonly problems: string[]
  constructor (problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}\nSee .env.example for every key and its default.`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

type Env = Record<string, string | undefined>

/**
 * Validates the environment against a schema once, at start. Empty strings count as unset, so
 * `PORT=` in a .env file means "use the default". Every bad key is reported, not only the first.
 */
export function loadConfig<S extends TObject> (schema: S, env: Env): Static<S> {
  const input: Record<string, unknown> = {}
  for (const key of Object.keys(schema.properties)) {
    const raw = env[key]
    if (raw !== undefined && raw.trim() !== '') input[key] = raw.trim()
  }
  const withDefaults = Value.Default(schema, input)
  const converted = Value.Convert(schema, withDefaults)
  const problems: string[] = []
  for (const error of Value.Errors(schema, converted)) {
    const key = error.path.replace(/^\//, '')
    const got = input[key]
    problems.push(`${key} ${describe(error.schema, error.message)}${got === undefined ? ' (it is not set)' : ` (got ${JSON.stringify(withoutPasswords(got))})`}`)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return converted as Static<S>
}

/** A bad URL is shown back without the password in it (DATABASE_URL, DATABASE_READ_URL, ...). */
function withoutPasswords (value: unknown): unknown {
  return typeof value === 'string' ? value.replace(/(\/\/[^:/@\s,]*:)[^@\s,]*@/g, '$1***@') : value
}

function describe (schema: unknown, fallback: string): string {
  if (typeof schema === 'object' && schema !== null && 'description' in schema && typeof schema.description === 'string') {
    return `must be ${schema.description}`
  }
  return fallback.toLowerCase()
}

/** The schema keys the environment sets explicitly (a busy explicit port is an error, a busy default one is not). */
export function explicitKeys (schema: TObject, env: Env): ReadonlySet<string> {
  return new Set(Object.keys(schema.properties).filter((key) => (env[key] ?? '').trim() !== ''))
}

/** The one place the platform reads process.env. */
export function fromEnvironment<S extends TObject> (schema: S): { config: Static<S>, explicit: ReadonlySet<string> } {
  return { config: loadConfig(schema, process.env), explicit: explicitKeys(schema, process.env) }
}
