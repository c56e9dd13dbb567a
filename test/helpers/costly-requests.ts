/**
 * The most expensive requests the OpenAPI document allows, for the cost test (test/fuzz/cost.test.ts)
 * and the cost benchmark (test/bench/cost.ts). Everything comes from the document: each GET
 * operation's query parameters take the values that make it work hardest (the widest ranges,
 * every declared example and enum value, the largest page, flags on), combined so that every
 * value of every parameter is sent at least once; a new route or parameter is covered as soon as
 * the document lists it.
 */
import type { Operation, Parameter, Schema } from './openapi-fuzz.js'

/** Parameters that change the envelope, not the work (JSON-P, pretty printing, credentials). */
const ENVELOPE = new Set(['callback', 'pretty', 'access_token', 'bearer_token'])

/** Zones whose offsets are not whole hours, and one whose clocks change: the zone paths' worst. */
export const ODD_ZONES = ['America/St_Johns', 'Pacific/Chatham', 'Asia/Kathmandu', 'America/New_York']
export const EARLIEST = '1970-01-01T00:00:00Z'
export const LATEST = '2200-12-31T23:59:59Z'

const isStart = (name: string): boolean => /(^|_)(from|since|start|after)$/.test(name)

/** The values of one parameter that cost the most, by what its schema declares. */
export function costlyValues (parameter: Parameter): string[] {
  const schema: Schema = parameter.schema
  const values = new Set<string>()
  for (const example of parameter.examples ?? []) values.add(String(example))
  if (Array.isArray(schema.enum)) for (const value of schema.enum) values.add(String(value))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  if (type === 'boolean') values.add('true')
  if (type === 'integer' || type === 'number') values.add(String(schema.maximum ?? 1_000_000))
  if (schema.format === 'date-time' || schema.format === 'date') values.add(isStart(parameter.name) ? EARLIEST : LATEST)
  if (/time_?zone/.test(parameter.name)) for (const zone of ODD_ZONES) values.add(zone)
  return [...values]
}

export interface CostlyRequest { operation: Operation, url: string }

/**
 * Requests over every GET operation: request i gives each parameter its (i + k)th costly value
 * (k the parameter's position), so every value of every parameter appears and they meet in many
 * combinations; `rounds` more passes than the longest list of values. A request names path ids
 * through `idFor`.
 */
export function costlyRequests (operations: Operation[], idFor: (operation: Operation, parameter: Parameter) => string, rounds = 2): CostlyRequest[] {
  const requests: CostlyRequest[] = []
  for (const operation of operations) {
    if (operation.method !== 'GET') continue
    const query = operation.parameters.filter((p) => p.in === 'query' && !ENVELOPE.has(p.name) && !p.name.includes('['))
      .map((p) => ({ name: p.name, values: costlyValues(p) })).filter((p) => p.values.length > 0)
    const count = Math.max(1, ...query.map((p) => p.values.length)) + rounds
    let path = operation.path
    for (const parameter of operation.parameters.filter((p) => p.in === 'path')) {
      path = path.replace(`{${parameter.name}}`, encodeURIComponent(idFor(operation, parameter)))
    }
    // A second pass leaves a third of the parameters out in turn: some name alternatives of one
    // another (sensor_id and sensor_ids), and the other form has its own path.
    for (let i = 0; i < 2 * count; i++) {
      const search = new URLSearchParams()
      query.forEach((p, k) => { if (i < count || (i + k) % 3 !== 0) search.set(p.name, p.values[(i + k) % p.values.length] as string) })
      const text = search.toString()
      requests.push({ operation, url: text === '' ? path : `${path}?${text}` })
    }
  }
  return requests
}
