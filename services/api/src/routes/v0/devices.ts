import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { compileListQuery, DeviceBody, deviceBody, deviceListBody, deviceService, isAdmin, loadDevice, loadDeviceRow, type MapBody, presentDevice } from '@esp/domain'
import { baseUrl, errorResponses, etagMatches, listQuery, parsedParam, rawQuery, recordIdParam, requireViewer, setPaginationHeaders, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { readKept, sendKept } from './kept.js'

const Id = Type.Object({ id: recordIdParam('device', 20) })
const ListQuery = listQuery(deviceService.deviceFilters, {
  near: Type.Optional(parsedParam(Type.String({ pattern: '^-?[0-9]+(\\.[0-9]+)?, *-?[0-9]+(\\.[0-9]+)?$', example: '41.39,2.17', description: '"<latitude>,<longitude>": nearest first, within `within` km' }))),
  // OpenAPI 3.0 writes an exclusive bound as a flag beside the bound.
  within: Type.Optional(parsedParam(Type.Unsafe<number>({ type: 'number', minimum: 0, exclusiveMinimum: true, default: 1000, description: 'kilometres around `near`' }))),
  with_tags: Type.Optional(Type.String({ description: 'tag names separated by |: devices with any of them' }))
})

const WorldMapItem = Type.Object({}, { additionalProperties: true })

const CompactMapDescription = [
  'The devices of `fresh_world_map` (public ones; signed in, also the private ones the caller may see), in columns: the i-th',
  'device is the i-th item of each column, in ascending id order. Built with the world map from the same rows and kept as',
  'fresh by the same revisions (a device hidden, archived or given away: at the next answer; a new reading: within a',
  'rebuild), at most 30 s behind the clock.',
  '',
  '`{"count":2,"id":[12,3],"lat":[4138879,4140000],"lng":[215899,219000],"condition":"on","exposure":"oi","name":["Balcony","Kitchen"]}`',
  'is device 12 at 41.38879, 2.15899, online, outdoors, and device 15 at 41.4, 2.19, new, indoors.'
].join('\n')

const CompactMap = Type.Object({
  count: Type.Integer({ minimum: 0, description: 'how many devices; every column has this many items (characters for the strings)' }),
  id: Type.Array(Type.Integer(), { description: 'ids, delta-coded: the first id, then each id minus the one before it' }),
  lat: Type.Array(Type.Integer(), { description: 'latitudes in 1e-5 degrees (divide by 100000)' }),
  lng: Type.Array(Type.Integer(), { description: 'longitudes in 1e-5 degrees (divide by 100000)' }),
  condition: Type.String({ pattern: '^[ofn]*$', description: 'a letter a device: o online (a reading in the last 60 minutes), f offline, n new (no reading yet)' }),
  exposure: Type.String({ pattern: '^[io]*$', description: 'a letter a device: i indoor, o outdoor (also when not set, as system_tags say)' }),
  name: Type.Array(Type.String(), { description: 'names' }),
  measurement: Type.Optional(Type.Integer({ description: 'with ?measurement: its id' })),
  value: Type.Optional(Type.Array(Type.Union([Type.Number(), Type.Null()]), { description: 'with ?measurement: each device\'s latest value of it (of its newest sensor of it), null when none' }))
}, { description: 'the explorer\'s map of devices, columnar' })

/** Encodings of an Accept-Encoding header, without those refused with q=0. */
function acceptedEncodings (header: string | undefined): Set<string> {
  const result = new Set<string>()
  for (const part of (header ?? '').split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';')
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined)
    if (name !== '' && (q === undefined || Number(q) > 0)) result.add(name)
  }
  return result
}

/** Serves a precomputed map body: 304 on a matching ETag, else the best encoding the client accepts. */
async function sendMap (request: FastifyRequest, reply: FastifyReply, body: MapBody, cacheControl: string): Promise<FastifyReply> {
  reply.header('etag', body.etag).header('cache-control', cacheControl).header('vary', 'accept-encoding')
  if (etagMatches(request.headers['if-none-match'], body.etag)) return reply.code(304).send()
  reply.type('application/json; charset=utf-8')
  const query = rawQuery(request)
  // pretty and JSON-P rewrite the body, so they get the plain rendering.
  if (query.has('pretty') || query.has('callback')) return reply.send(body.json)
  const accepted = acceptedEncodings(request.headers['accept-encoding'])
  if (accepted.has('br')) return reply.header('content-encoding', 'br').send(await body.encode('br'))
  if (accepted.has('gzip')) return reply.header('content-encoding', 'gzip').send(await body.encode('gzip'))
  return reply.send(body.json)
}

/** Contract: Devices. Lists with filters, the world maps, one device, and its writes. */
export async function deviceRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['devices']
  const options = (request: FastifyRequest, creation = false) => ({ viewer: request.viewer, baseUrl: baseUrl(request), now: ctx.clock(), creation })
  // After a write, the device is read back as GET /devices/:id reads it.
  const reread = async (request: FastifyRequest, id: number, creation = false) =>
    presentDevice(await loadDevice(ctx.database, id, request.viewer), options(request, creation))

  // Kept reads check remembered credentials by their own statement (kept.ts readKept).
  const keptRead = { credentialsCheckedByRead: true }

  app.get('/devices', {
    config: keptRead,
    schema: {
      tags,
      summary: 'List devices with their data, kit and owner (paginated; q[<key>_<matcher>] filters; near; with_tags)',
      operationId: 'listDevices',
      querystring: ListQuery,
      response: { 200: Type.Array(Type.Ref('Device')), ...errorResponses(400, 401, 429) }
    }
  }, async (request, reply) => {
    const query = compileListQuery(rawQuery(request), deviceService.deviceFilters, { admin: isAdmin(request.viewer) })
    const params = { near: request.query.near, within: request.query.within, withTags: request.query.with_tags }
    const { kept, total } = await readKept(ctx, request, async (caller) => await deviceListBody(request.reads.database, query, params, caller))
    setPaginationHeaders(request, reply, { page: query.page, perPage: query.perPage, total })
    return sendKept(reply, kept)
  })

  app.get('/devices/world_map', {
    schema: {
      tags,
      summary: 'Every public device with a location, for the map (not paginated; ETag; gzip or br)',
      operationId: 'worldMap',
      response: { 200: Type.Array(WorldMapItem), ...errorResponses(429) }
    }
  }, async (request, reply) => await sendMap(request, reply, await request.reads.worldMap.publicMap(), 'public, max-age=30'))

  app.get('/devices/fresh_world_map', {
    schema: {
      tags,
      summary: 'The world map with the private devices the caller may see (their own; every one for admins)',
      operationId: 'freshWorldMap',
      response: { 200: Type.Array(WorldMapItem), ...errorResponses(401, 429) }
    }
  }, async (request, reply) => await sendMap(request, reply, await request.reads.worldMap.forViewer(request.viewer), request.viewer === null ? 'public, max-age=30' : 'private, no-cache'))

  app.get('/devices/compact_map', {
    schema: {
      tags,
      summary: 'What the explorer\'s map draws of the world map\'s devices, in columns (ETag; gzip or br)',
      description: CompactMapDescription,
      operationId: 'compactMap',
      querystring: Type.Object({ measurement: Type.Optional(recordIdParam('measurement', 20)) }),
      response: { 200: CompactMap, ...errorResponses(401, 404, 429) }
    }
  }, async (request, reply) => {
    const body = await request.reads.worldMap.compactMap(request.viewer, request.query.measurement)
    return await sendMap(request, reply, body, request.viewer === null ? 'public, max-age=30' : 'private, no-cache')
  })

  app.get('/devices/:id', {
    config: keptRead,
    schema: {
      tags,
      summary: 'One device, with the latest value of each sensor',
      operationId: 'getDevice',
      params: Id,
      response: { 200: Type.Ref('Device'), ...errorResponses(401, 404, 429) }
    }
  }, async (request, reply) => {
    // The request's whole path: parse the id, one cheap statement for the revisions and the access
    // check, then the kept text (or one prepared statement, the presenter and the serializer).
    return sendKept(reply, await readKept(ctx, request, async (caller) => await deviceBody(request.reads.database, request.params.id, caller)))
  })

  app.post('/devices', {
    schema: {
      tags,
      summary: 'Add a device; the caller becomes its owner',
      operationId: 'createDevice',
      security: SIGNED_IN,
      body: DeviceBody,
      response: { 201: Type.Ref('Device'), ...errorResponses(400, 401, 422, 429) }
    }
  }, async (request, reply) => {
    const viewer = requireViewer(request)
    const row = await deviceService.createDevice(ctx.database, request.body, viewer, { now: ctx.clock() })
    reply.code(201)
    return await reread(request, row.id, true)
  })

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/devices/:id',
      schema: {
        tags,
        summary: 'Change a device (owner or admin)',
        operationId: method === 'PATCH' ? 'updateDevice' : 'replaceDevice',
        security: SIGNED_IN,
        params: Id,
        body: Type.Optional(DeviceBody),
        response: { 200: Type.Ref('Device'), ...errorResponses(400, 401, 403, 404, 422, 429) }
      },
      handler: async (request) => {
        const viewer = requireViewer(request)
        const device = await loadDeviceRow(ctx.database, request.params.id, viewer)
        const row = await deviceService.updateDevice(ctx.database, device, request.body ?? {}, viewer, { now: ctx.clock() })
        return await reread(request, row.id)
      }
    })
  }

  app.delete('/devices/:id', {
    schema: {
      tags,
      summary: 'Archive a device (owner or admin); it is purged with its readings after the grace period',
      operationId: 'deleteDevice',
      security: SIGNED_IN,
      params: Id,
      // The contract's answer: 200 with an empty body (behaviour.md: here the contract wins
      // over the reference's {"message":"OK"}), so no Content-Type either.
      response: { 200: Type.Null({ description: 'OK: an empty body' }), ...errorResponses(401, 403, 404, 429) }
    }
  }, async (request, reply) => {
    const viewer = requireViewer(request)
    const device = await loadDeviceRow(ctx.database, request.params.id, viewer)
    await deviceService.archiveDevice(ctx.database, device, viewer, ctx.clock())
    // No payload at all, not the schema's null: nothing is serialized, so nothing is sent.
    await (reply as FastifyReply).code(200).send()
  })

  app.post('/devices/:id/device_token', {
    schema: {
      tags,
      summary: 'Issue a new device token (owner or admin); the old one stops working at once',
      description: 'Device tokens are made by the platform (6 lower-case letters and digits, from a cryptographic random source) and are never chosen: ' +
        'a device_token in a POST or PATCH body is refused with 422. Configure the kit with the token of the answer.',
      operationId: 'regenerateDeviceToken',
      security: SIGNED_IN,
      params: Id,
      response: { 200: Type.Ref('Device'), ...errorResponses(401, 403, 404, 429) }
    }
  }, async (request) => {
    const viewer = requireViewer(request)
    const device = await loadDeviceRow(ctx.database, request.params.id, viewer)
    const row = await deviceService.regenerateDeviceToken(ctx.database, device, viewer, ctx.clock())
    return await reread(request, row.id)
  })

  app.post('/devices/:id/restore', {
    schema: {
      tags,
      summary: 'Bring back an archived device during the grace period (admins)',
      operationId: 'restoreDevice',
      security: SIGNED_IN,
      params: Id,
      response: { 200: Type.Ref('Device'), ...errorResponses(401, 403, 404, 429) }
    }
  }, async (request) => {
    const row = await deviceService.restoreDevice(ctx.database, request.params.id, requireViewer(request), ctx.clock())
    return await reread(request, row.id)
  })
}
