import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { engineName, postgresRunner } from '@esp/db'
import { type AreaContext, ClosedDays, areaInterpolation, areaStatistics, AREA_MAX_DEVICE_WINDOWS, DEVICE_WINDOWS_PER_RATE_UNIT, MAX_EXPORT_DEVICE_IDS, MAX_GRID_CELLS, MAX_GRID_STEPS, MAX_LISTED_VALUES, MAX_PERCENTILES, rollupFunctions } from '@esp/domain'
import { errorResponses, parsedParam } from '@esp/http'
import type { ApiContext } from '../../context.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])

/** What is measured and which devices: the exports' selectors, exposure, and the windows. */
const AreaQuery = {
  measurement_id: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'the measurement (e.g. 14 for PM 2.5): each device by its sensor of it (the lowest sensor id with a reading when it has two). One of measurement_id, sensor_id and sensor_key is required' }))),
  sensor_id: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'one sensor, on every device that has it' }))),
  sensor_key: Type.Optional(Type.String({ maxLength: 64, description: "a sensor by its kit's key (or a sensor's default key), as the readings history resolves it" })),
  device_ids: Type.Optional(Type.String({ maxLength: 12_000, pattern: '^[0-9, ]*$', description: `device ids separated by commas, at most ${MAX_EXPORT_DEVICE_IDS}` })),
  with_tags: Type.Optional(Type.String({ maxLength: 1000, description: 'tag names separated by |: devices with any of them' })),
  bbox: Type.Optional(Type.String({ maxLength: 100, pattern: '^ *-?[0-9]+(\\.[0-9]+)? *(, *-?[0-9]+(\\.[0-9]+)? *){3}$', description: 'west,south,east,north in degrees, e.g. 2.05,41.32,2.23,41.47 (west above east crosses the antimeridian)' })),
  exposure: Type.Optional(parsedParam(Type.String({ enum: ['indoor', 'outdoor'], description: 'only indoor or only outdoor devices (a device without one is outdoor)' }))),
  function: Type.Optional(parsedParam(Type.String({ enum: [...rollupFunctions], default: 'avg', description: "each device's own aggregate of a window, before the statistics across devices" }))),
  from: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'ISO 8601, a date, or epoch seconds; default: 6 weeks before to' }))),
  to: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'as from, inclusive; default: now' }))),
  timezone: Type.Optional(parsedParam(Type.String({ maxLength: 64, description: 'an IANA time zone (e.g. Europe/Madrid): windows of hours, days, weeks, months and years follow its wall clock; times stay UTC', examples: ['Europe/Madrid'] })))
}

const rollupParam = (description: string) => Type.Optional(parsedParam(Type.String({ pattern: '^[0-9]{1,9}(ms|y|M|w|d|h|m|s)$', description, examples: ['1h', '1d', '15m', '1w', '1M'] })))

const Window = Type.Object({
  time: Type.String({ format: 'date-time', description: "the window's start" }),
  devices: Type.Integer({ description: 'devices with a value in the window' }),
  mean: Type.Number(),
  sd: Nullable(Type.Number({ description: 'sample standard deviation (n − 1); null with one device' })),
  min: Type.Number(),
  max: Type.Number(),
  median: Type.Number(),
  percentiles: Type.Array(Type.Number(), { description: 'the percentiles asked for, in their order' }),
  values: Type.Optional(Type.Array(Type.Array(Type.Number(), { minItems: 2, maxItems: 2 }), { description: 'with per_device=true: [device_id, value] pairs by device id' }))
})

const Statistics = Type.Object({
  measurement_id: Nullable(Type.Integer()),
  sensor_id: Nullable(Type.Integer()),
  sensor_key: Nullable(Type.String()),
  rollup: Type.String(),
  function: Type.String(),
  timezone: Type.String(),
  from: Type.String(),
  to: Type.String(),
  percentiles: Type.Array(Type.Number()),
  devices: Type.Integer({ description: 'devices with a value in any window' }),
  windows: Type.Array(Window, { description: 'windows with at least one value, newest first' })
})

const Grid = Type.Object({
  type: Type.Literal('FeatureCollection'),
  bbox: Type.Array(Type.Number(), { minItems: 4, maxItems: 4 }),
  measurement_id: Nullable(Type.Integer()),
  sensor_id: Nullable(Type.Integer()),
  sensor_key: Nullable(Type.String()),
  function: Type.String(),
  rollup: Type.String(),
  timezone: Type.String(),
  from: Type.String(),
  to: Type.String(),
  cell_size: Type.Number(),
  cell_shape: Type.String(),
  power: Type.Number(),
  max_distance: Type.Number(),
  steps: Type.Array(Type.String({ format: 'date-time' }), { description: "each time step's window start" }),
  devices: Type.Array(Type.Object({ id: Type.Integer(), latitude: Type.Number(), longitude: Type.Number(), values: Type.Array(Nullable(Type.Number())) }), { description: 'the devices the surface is made from, with their value at each step' }),
  classes: Type.Array(Type.Object({ from: Type.Number(), to: Type.Number(), color: Type.String() }), { description: 'a legend: at most 7 classes with rounded bounds over every step' }),
  features: Type.Array(Type.Object({
    type: Type.Literal('Feature'),
    geometry: Type.Object({ type: Type.Literal('Polygon'), coordinates: Type.Array(Type.Array(Type.Array(Type.Number()))) }),
    properties: Type.Object({ values: Type.Array(Nullable(Type.Number())), class: Type.Array(Nullable(Type.Integer())) })
  }), { description: 'cells with a value at some step; a value is null where no device with a value is within max_distance' })
})

/** Area statistics and interpolated grids across the devices a caller may see (issue 38). */
export async function areaRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  // Closed days of hourly values, kept by this process on the native engine, whose tiers are
  // written in the readings' own transaction. On timescale a late write reaches the hourly tier
  // only at the next refresh of its aggregate, after its revision moved: a day read between
  // the two would be kept stale, so nothing is kept there.
  const closedDays = engineName(postgresRunner(ctx.database.sql)).then((engine) => engine === 'native' ? new ClosedDays(ctx.settings.readCacheBytes / 4) : undefined)
  const areaContext = async (request: FastifyRequest): Promise<AreaContext> => ({
    database: request.reads.database,
    runner: request.reads.history,
    now: ctx.clock,
    maxBuckets: ctx.settings.maxBuckets,
    maxDeviceWindows: AREA_MAX_DEVICE_WINDOWS,
    // Paid for once the devices and windows are counted, before anything is read.
    charge: async (deviceWindows: number) => { await request.chargeRateLimit(Math.floor(deviceWindows / DEVICE_WINDOWS_PER_RATE_UNIT)) },
    closedDays: await closedDays
  })

  app.get('/readings/statistics', {
    schema: {
      tags: ['readings'],
      summary: "Statistics of an area per window: across the devices' own values of each window, their number, mean, sd, min, max, median and percentiles",
      description: 'Each device (active, visible to the caller, matching every selector given) contributes its own aggregate of each window (function, avg by default), so a device reporting every 10 s weighs what one reporting every minute does; ' +
        "the values come from the stored tiers as the device's own readings history does. A private device named in device_ids is a 404; tags and a box never find one. " +
        `Bounded before any work: at most ${AREA_MAX_DEVICE_WINDOWS.toLocaleString('en-US')} device windows (devices × windows, the range ending at the selection's newest reading), charged to the rate limit a unit per ${DEVICE_WINDOWS_PER_RATE_UNIT.toLocaleString('en-US')}.`,
      operationId: 'getAreaStatistics',
      querystring: Type.Object({
        ...AreaQuery,
        rollup: rollupParam('required: the window, an integer and a unit (e.g. 1h, 1d); not raw'),
        percentiles: Type.Optional(Type.String({ maxLength: 200, description: `numbers from 0 to 100 separated by commas (at most ${MAX_PERCENTILES}), e.g. 10,90`, examples: ['10,90', '5,25,75,95'] })),
        per_device: Type.Optional(parsedParam(Type.Boolean({ default: false, description: `true: each window lists every device's value (then at most ${MAX_LISTED_VALUES.toLocaleString('en-US')} device windows)` })))
      }),
      response: { 200: Statistics, ...errorResponses(400, 401, 404, 429) }
    }
  }, async (request, reply) => {
    // The schema documents the answer; its bytes are written from the values' columns.
    const bytes: FastifyReply = reply.type('application/json; charset=utf-8')
    return await bytes.send(await areaStatistics(await areaContext(request), request.viewer, request.query))
  })

  app.get('/readings/interpolation', {
    schema: {
      tags: ['readings'],
      summary: 'An inverse-distance-weighted grid of a measurement over a box (GeoJSON), per time step',
      description: 'The devices of the box (and of any other selector given) with their own value of each window; each cell\'s value weighs them by 1 / distance^power within max_distance of its centre, and a cell out of reach of every device is empty (at that step null; at every step, left out). ' +
        `At most ${MAX_GRID_CELLS.toLocaleString('en-US')} cells and ${MAX_GRID_STEPS} steps, counted before any work.`,
      operationId: 'getAreaInterpolation',
      querystring: Type.Object({
        ...AreaQuery,
        rollup: rollupParam(`the time steps' window (default 1d): every window of [from, to], at most ${MAX_GRID_STEPS}`),
        cell_size: Type.Optional(parsedParam(Type.Number({ minimum: 0, maximum: 1000, default: 1, description: "a cell's size in km, above 0 (a square's side; a hexagon's width between opposite sides)" }))),
        cell_shape: Type.Optional(parsedParam(Type.String({ enum: ['square', 'hexagon'], default: 'square' }))),
        power: Type.Optional(parsedParam(Type.Number({ minimum: 0, maximum: 10, default: 2, description: 'above 0: the weight is 1 / distance^power' }))),
        max_distance: Type.Optional(parsedParam(Type.Number({ minimum: 0, maximum: 5000, default: 5, description: 'km, above 0: devices farther from a cell do not weigh in it' })))
      }),
      response: { 200: { description: 'a GeoJSON FeatureCollection', content: { 'application/geo+json': { schema: Grid } } }, ...errorResponses(400, 401, 404, 429) }
    }
  }, async (request, reply) => {
    const bytes: FastifyReply = reply.type('application/geo+json; charset=utf-8')
    return await bytes.send(await areaInterpolation(await areaContext(request), request.viewer, request.query))
  })
}
