import t from 'tap'
import { Type } from '@sinclair/typebox'
import { buildServer, errorResponses } from '@esp/http'
import { sharedSerializers } from '../src/serializers.js'
import { testHttpOptions } from '@esp/test-helpers/server'

t.test('the same response schema gets one serializer, whichever route and status ask for it', async (t) => {
  const factory = sharedSerializers()
  const external = { Shared: { $id: 'Shared', type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'null' }] } } } }
  const compile = factory(external, {})
  const nullable = { type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'null' }] } } }
  const first = compile({ method: 'GET', url: '/a', httpStatus: '404', schema: nullable })
  t.equal(compile({ method: 'POST', url: '/b', httpStatus: '400', schema: structuredClone(nullable) }), first, 'an equal schema of another route shares it')
  t.equal(factory(structuredClone(external), {})({ method: 'GET', url: '/c', httpStatus: '404', schema: nullable }), first, 'so does another context with the same shared schemas')
  t.not(compile({ method: 'GET', url: '/a', httpStatus: '200', schema: { type: 'object', properties: { w: { type: 'integer' } } } }), first, 'another schema gets its own')
  t.not(factory({}, {})({ method: 'GET', url: '/a', httpStatus: '404', schema: nullable }), first, 'and so do other shared schemas')
  t.equal(first({ v: null, extra: 1 }), '{"v":null}', 'it serializes as fast-json-stringify does, dropping what the schema does not name')
})

t.test('error bodies of many routes serialize through the shared serializer, each in the one error shape', async (t) => {
  const app = await buildServer(testHttpOptions)
  for (let i = 0; i < 30; i++) {
    app.get(`/v0/r${i}`, { schema: { response: { 200: Type.Object({ i: Type.Integer() }), ...errorResponses(400, 404, 429) } } }, async (_request, reply) =>
      i % 2 === 0 ? { i, hidden: 'x' } : await reply.code(404 as 200).send({ id: 'not_found', message: `r${i}`, errors: null, url: null, stack: 'secret' }))
  }
  await app.ready()
  t.teardown(async () => { await app.close() })
  for (let i = 0; i < 30; i++) {
    const res = await app.inject({ url: `/v0/r${i}` })
    if (i % 2 === 0) t.same(res.json(), { i }, `route ${i}: its own schema`)
    else t.same(res.json(), { id: 'not_found', message: `r${i}`, errors: null, url: null }, `route ${i}: the error shape, nothing more`)
  }
})
