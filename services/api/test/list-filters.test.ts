import t from 'tap'
import { catalogue, deviceService, experimentService, userService, type FilterSpec } from '@esp/domain'
import { bearer, buildApi, signUp, signUpAs } from '@esp/test-helpers/api'

/** Every list route and the filter keys it takes: the compiler's own specs, so a new key is tried too. */
const routes: Array<[string, FilterSpec]> = [
  ['/v0/devices', deviceService.deviceFilters],
  ['/v0/users', userService.userFilters],
  ['/v0/sensors', catalogue.sensorFilters],
  ['/v0/measurements', catalogue.measurementFilters],
  ['/v0/kits', catalogue.kitFilters],
  ['/v0/tags', catalogue.tagFilters],
  ['/v0/tag_sensors', catalogue.tagSensorFilters],
  ['/v0/experiments', experimentService.experimentFilters]
]

const COMPARISONS = ['eq', 'not_eq', 'lt', 'lteq', 'gt', 'gteq']
const UUID = '0b0c8f5e-8f3a-4c1e-9a57-2d6f1b8e4c11'

/** Valid values per field type: every matcher the type takes, with the forms clients send. */
const valid: Record<string, Array<[string, string]>> = {
  integer: [
    ...COMPARISONS.map((m): [string, string] => [m, '1']),
    ['eq', '2147483647'], ['lt', '-2147483648'], ['in', '1,2,2147483647'], ['not_in', '-2147483648,0'], ['null', '1'], ['not_null', 'true']
  ],
  timestamp: [
    ...COMPARISONS.map((m): [string, string] => [m, '2026-11-25']),
    ['lt', '2026-11-25T10:00:00Z'], ['gt', '2026-11-25T10:00'], ['lteq', '2026-11-25 10:00:00.123456'],
    ['gteq', '2026-11-25T10:00:00%2B02:00'], ['lt', '2026-11-25T10:00:00+02:00'], ['eq', '2024-02-29'],
    ['gt', '0001-01-01'], ['lt', '9999-12-31T23:59:59Z'], ['in', '2026-11-25,2026-11-26T00:00:00Z'], ['not_in', '2026-11-25'],
    ['null', '1'], ['not_null', '1']
  ],
  text: [...COMPARISONS.map((m): [string, string] => [m, 'a']), ['cont', 'a%25_'], ['start', 'a'], ['end', 'a'], ['in', 'a,b'], ['not_in', 'a'], ['null', '0']],
  uuid: [...COMPARISONS.map((m): [string, string] => [m, UUID]), ['not_eq', UUID.toUpperCase()], ['in', `${UUID},${UUID}`], ['not_in', UUID], ['not_null', '1']],
  boolean: [...COMPARISONS.map((m): [string, string] => [m, 'true']), ['not_eq', '0'], ['in', 'true,false'], ['not_in', '1'], ['null', 'false']]
}

/** Values the compiler must refuse with 400 (before they reach PostgreSQL), per field type. */
const invalid: Record<string, Array<[string, string]>> = {
  integer: [['eq', '2147483648'], ['lt', '-2147483649'], ['gt', '99999999999'], ['in', '1,99999999999'], ['eq', '1.5'], ['end', '1']],
  timestamp: [['lt', '2026-02-31'], ['eq', '2026-13-01'], ['gt', '2026-11-25T24:00:00Z'], ['lt', '2026-11-25T10:61'], ['gteq', '0000-01-01'],
    ['lteq', '0001-01-01T00:00:00%2B01:00'], ['eq', '2025-02-29'], ['in', '2026-11-25,2026-04-31'], ['lt', 'yesterday']],
  uuid: [['eq', 'not-a-uuid'], ['cont', UUID]],
  boolean: [['eq', 'maybe'], ['start', 't']],
  text: [['null', 'maybe']]
}

t.test('every list route x every key x every matcher with valid values: 200 against the real database', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const admin = await signUpAs(harness, 'admin')
  const owner = await signUp(app)
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'filtered', latitude: 41.39, longitude: 2.16 } })
  t.equal(created.statusCode, 201)
  const experiment = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { name: 'filtered' } })
  t.equal(experiment.statusCode, 201)

  let tried = 0
  for (const [route, spec] of routes) {
    for (const [key, field] of Object.entries(spec)) {
      for (const [matcher, value] of valid[field.type] ?? []) {
        const url = `${route}?q[${key}_${matcher}]=${value}`
        const res = await app.inject({ url, headers: bearer(admin.token) })
        tried += 1
        if (res.statusCode !== 200) t.fail(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
      }
      for (const [matcher, value] of invalid[field.type] ?? []) {
        const url = `${route}?q[${key}_${matcher}]=${value}`
        const res = await app.inject({ url, headers: bearer(admin.token) })
        if (res.statusCode !== 400) t.fail(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`)
        else t.match(res.json(), { id: 'bad_request', message: /Invalid search term/, errors: { [`q[${key}_${matcher}]`]: [String] } }, `${url}: the error shape names the key`)
      }
    }
  }
  t.ok(tried > 500, `${tried} valid filters answered 200`)
})

t.test('timestamp filters select by the instant they name', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const owner = await signUp(app)
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'timed' } })
  const device = created.json() as { id: number }
  await harness.database.sql`update devices set created_at = '2026-11-25T10:00:00Z' where id = ${device.id}`
  const ids = async (query: string): Promise<number[]> => {
    const res = await app.inject({ url: `/v0/devices?q[owner_id_eq]=${owner.id}&${query}` })
    t.equal(res.statusCode, 200, query)
    return (res.json() as Array<{ id: number }>).map((d) => d.id)
  }
  t.same(await ids('q[created_at_lt]=2026-11-25'), [], 'a date is its midnight UTC')
  t.same(await ids('q[created_at_gt]=2026-11-25'), [device.id])
  t.same(await ids('q[created_at_eq]=2026-11-25T10:00:00Z'), [device.id])
  t.same(await ids('q[created_at_eq]=2026-11-25T12:00:00%2B02:00'), [device.id], 'an offset names the same instant')
  t.same(await ids('q[created_at_eq]=2026-11-25T12:00:00+02:00'), [device.id], 'an offset whose + the query decoded to a space')
  t.same(await ids('q[created_at_lteq]=2026-11-25T09:59:59.999Z'), [])
  t.same(await ids('q[created_at_in]=2026-11-24,2026-11-25T10:00:00Z'), [device.id])
  t.same(await ids('q[created_at_not_in]=2026-11-25T10:00:00Z'), [])
})
