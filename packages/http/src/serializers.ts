import { createHash } from 'node:crypto'
import { SerializerSelector, type SerializerFactory, type Serializer } from '@fastify/fast-json-stringify-compiler'

/**
 * Fastify's serializer factory, compiling each distinct response schema once. Fastify compiles one
 * serializer per route and status, and fast-json-stringify gives each serializer of a schema with
 * `anyOf` (the error body's nullable fields) an Ajv instance of its own: about 470 of them, alike,
 * held for the life of the process. The same schema against the same shared schemas makes the
 * same serializer, so one is compiled and handed to every route that asks for it.
 */
export function sharedSerializers (): SerializerFactory {
  const build = SerializerSelector()
  const compiled = new Map<string, Serializer>()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    const context = digest([externalSchemas, options])
    return (route) => {
      const key = digest([context, route.schema])
      let serializer = compiled.get(key)
      if (serializer === undefined) {
        serializer = compile(route)
        compiled.set(key, serializer)
      }
      return serializer
    }
  }
}

function digest (value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value) ?? '').digest('base64')
}
