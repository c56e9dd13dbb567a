import t from 'tap'
import { connectMqtt } from '@esp/test-helpers/mqtt'
import { PNG_1X1 } from '@esp/test-helpers/api'
import { addDevice, call, type Device, logIn, mailbox, signUp, signUpAs, startPlatform, until } from './platform.js'
import { runPython } from './python.js'

/**
 * clients.md §4 rules 26–35: the device, user, world-map and search objects as the connector's
 * pydantic models and the web's constructors read them, and the writes both send.
 */
const platform = await startPlatform(t)
const { base } = platform
const owner = await signUp(platform)
const stranger = await signUp(platform)
const admin = await signUpAs(platform, 'admin')
for (const name of ['Barcelona', 'Research']) await call(`${base}/tags`, { method: 'POST', token: admin.token, json: { name } })

// A kit that has told its status (E2) and published, as after a day in the field.
const E2 = '{"time":"2026-03-02T03:00:41Z","hw_ver":"2.3","id":"A1B2C3D4504E4B4B372E314AFF0A1B2C","sam_ver":"0.9.11-910fb56-master-sck23_air","sam_bd":"2026-02-10T11:42:07Z","mac":"5E:CF:7F:D1:75:78","esp_ver":"0.9.9-910fb56-master","esp_bd":"2026-02-10T11:40:55Z","rcause":"SYST"}'
const kit = await addDevice(platform, owner, { name: 'Rooftop' })
{
  const client = await connectMqtt(t, platform.mqttUrl, { clientId: kit.token, clean: true, keepalive: 120 })
  await client.publishAsync(`device/sck/${kit.token}/info`, E2, { qos: 1 })
  const at = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z')
  await client.publishAsync(`device/sck/${kit.token}/readings/raw`, `{t:${at},10:-1,221:1,14:312,55:23.41,56:48.72,53:51.83,58:101.04}`, { qos: 1 })
  await client.endAsync()
}

const FIVE_SAFE_TAGS = ['indoor', 'outdoor', 'online', 'offline', 'new']
type Json = Record<string, unknown>
const get = async (path: string, token?: string): Promise<Json> => {
  const res = await call(`${base}${path}`, token === undefined ? {} : { token })
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`)
  return res.json as Json
}
interface Validated { status: number, valid: boolean, errors?: unknown, load?: { status_message: string, data_policy: string, position: [number | null, number | null], status_errors?: unknown } }
const validate = async (path: string, model: string, token?: string): Promise<Validated> =>
  await runPython<Validated>('connector.py', { cmd: 'get', url: `${base}${path}`, model }, token === undefined ? {} : { SC_BEARER: token })

t.test('rule 26: GET /devices/:id validates as the connector\'s Device for everyone, and __load__ reads last_status_message and data_policy', async (t) => {
  for (const [label, token, statusMessage, policy, deviceToken] of [
    ['anonymous', undefined, 'filtered', 'filtered', '[FILTERED]'],
    ['another user', stranger.token, 'filtered', 'filtered', '[FILTERED]'],
    ['the owner', owner.token, 'object', 'object', kit.token],
    ['an admin', admin.token, 'object', 'object', kit.token]
  ] as const) {
    const checked = await validate(`/devices/${kit.id}`, 'Device', token)
    t.equal(checked.status, 200, `${label}: 200`)
    t.ok(checked.valid, `${label}: a valid Device ${JSON.stringify(checked.errors ?? '')}`)
    t.equal(checked.load?.status_message, statusMessage, `${label}: last_status_message is ${statusMessage} (${JSON.stringify(checked.load?.status_errors ?? '')})`)
    t.equal(checked.load?.data_policy, policy, `${label}: data_policy is read as ${policy}`)
    t.ok(checked.load?.position.every((v) => typeof v === 'number'), `${label}: location.latitude and longitude for the time zone`)
    const body = await get(`/devices/${kit.id}`, token)
    t.equal(body.device_token, deviceToken, `${label}: device_token is a string`)
    const sensors = (body.data as { sensors: Json[] }).sensors
    t.ok(sensors.length > 0 && sensors.every((s) => typeof s.description === 'string' && typeof s.uuid === 'string' && Array.isArray(s.tags)), `${label}: every sensor has a description, a uuid and tags`)
  }
  // A device that never published: last_status_message null for its owner, valid all the same.
  const fresh = await addDevice(platform, owner, { name: 'Fresh' })
  const checked = await validate(`/devices/${fresh.id}`, 'Device', owner.token)
  t.ok(checked.valid, 'a device without readings or status validates')
  t.equal(checked.load?.status_message, 'null')
  const listed = await runPython<{ errors: unknown[], items: unknown[] }>('connector.py', { cmd: 'list', url: `${base}/devices/`, model: 'Device' })
  t.same(listed.errors, [], `every item of devices/ validates (${listed.items.length} devices)`)
})

t.test('rule 26: data_policy.enable_forwarding, precise_location and forwarding_destination are [FILTERED] for others; is_private stays a real boolean', async (t) => {
  for (const [label, token] of [['anonymous', undefined], ['another user', stranger.token]] as const) {
    const policy = (await get(`/devices/${kit.id}`, token)).data_policy as Json
    t.same(policy, { is_private: false, enable_forwarding: '[FILTERED]', precise_location: '[FILTERED]', forwarding_destination: '[FILTERED]' }, `${label}`)
  }
  for (const [label, token] of [['the owner', owner.token], ['an admin', admin.token]] as const) {
    const policy = (await get(`/devices/${kit.id}`, token)).data_policy as Json
    t.match(policy, { is_private: false, enable_forwarding: Boolean, precise_location: Boolean }, `${label}: the real values`)
    t.ok('forwarding_destination' in policy && policy.forwarding_destination !== '[FILTERED]', `${label}: forwarding_destination`)
  }
  // The same rule wherever a device is shown.
  const item = ((await get('/devices')) as unknown as Json[]).find((d) => d.id === kit.id)
  t.equal((item?.data_policy as Json | undefined)?.enable_forwarding, '[FILTERED]', 'in /devices')
  const inProfile = ((await get(`/users/${owner.id}`)).devices as Json[]).find((d) => d.id === kit.id)
  t.equal((inProfile?.data_policy as Json | undefined)?.enable_forwarding, '[FILTERED]', 'in /users/:id')
})

t.test('rule 27: the fields the web reads from a device (D-web)', async (t) => {
  const body = await get(`/devices/${kit.id}`, owner.token)
  t.match(body.notify, { low_battery: Boolean, stopped_publishing: Boolean }, 'notify is an object of booleans')
  t.match(body.data_policy, { is_private: Boolean, precise_location: Boolean, enable_forwarding: Boolean }, 'data_policy is an object')
  const tags = body.system_tags as string[]
  t.ok(Array.isArray(tags) && (tags.includes('online') || tags.includes('offline')), `system_tags holds online or offline (${tags.join(', ')})`)
  t.equal(body.state, 'has_published', 'state with underscores')
  t.equal(String(body.state).replace('_', ' '), 'has published', 'as the UI compares it')
  t.match(body.owner, { id: owner.id, username: owner.username, device_ids: Array, location: { city: null, country_code: null } })
  t.ok(body.owner !== null && typeof body.owner === 'object' && 'url' in body.owner && 'profile_picture' in body.owner, 'owner url and profile_picture')
  t.match(body.location, { city: 'Barcelona', country: 'Spain', latitude: Number, longitude: Number })
  t.match(body.hardware, { name: 'SmartCitizen Kit 2.3', type: 'SCK', version: '2.3', slug: 'sck:2,3' })
  t.match(body.hardware, { last_status_message: { sam_ver: String, esp_ver: String } }, 'the status message, cut up as strings by the web')
  t.match(/^(\d+)\.(\d+)$/.exec(String((body.hardware as Json).version)), Array, 'version is major.minor')
  t.equal(((await get(`/devices/${kit.id}`)).hardware as Json).last_status_message, '[FILTERED]', 'a string when filtered')
  const sensors = (body.data as { sensors: Json[] }).sensors
  for (const sensor of sensors) {
    for (const key of ['id', 'name', 'unit', 'value', 'prev_value', 'last_reading_at', 'datasheet', 'measurement']) t.ok(key in sensor, `sensor ${String(sensor.id)}: ${key}`)
    t.ok(Array.isArray(sensor.tags), `sensor ${String(sensor.id)}: tags is an array (indexOf('raw'))`)
    t.ok(sensor.measurement === null || (typeof (sensor.measurement as Json).name === 'string' && 'description' in (sensor.measurement as Json)), `sensor ${String(sensor.id)}: measurement null or {name, description}`)
  }
  const battery = sensors.find((s) => (s.measurement as Json | null)?.name === 'battery')
  t.equal(battery?.value, -1, 'the battery sensor (measurement "battery") shows the firmware\'s -1 for "no battery"')
  for (const key of ['device_token', 'mac_address', 'last_reading_at', 'created_at', 'updated_at', 'postprocessing', 'description', 'user_tags']) t.ok(key in body, `also read: ${key}`)
  // W6: "Locate me" reads the older data.location.
  const near = await call(`${base}/devices?near=41.39,2.16&per_page=100`)
  const first = (near.json as Json[])[0]
  t.match(first, { data: { location: { latitude: Number, longitude: Number }, sensors: Array } }, 'near: data.location and data.sensors')
})

t.test('rule 28: user.devices[] in /me and /users/:id are full device objects', async (t) => {
  for (const [path, token] of [['/me', owner.token], [`/users/${owner.id}`, undefined], [`/users/${owner.id}`, stranger.token]] as const) {
    const devices = (await get(path, token)).devices as Json[]
    t.ok(devices.length >= 1, `${path}: devices`)
    for (const device of devices) {
      t.match(device, {
        id: Number,
        uuid: String,
        name: String,
        state: String,
        system_tags: Array,
        user_tags: Array,
        notify: { low_battery: Boolean, stopped_publishing: Boolean },
        data_policy: Object,
        hardware: { name: String, type: String, slug: String },
        updated_at: String,
        device_token: String
      }, `${path} device ${String(device.id)}: the D-web and D-conn fields`)
    }
  }
  const checked = await validate(`/users/${owner.id}`, 'User')
  t.ok(checked.valid, `the connector validates User.devices as List[Device] ${JSON.stringify(checked.errors ?? '')}`)
})

t.test('rule 29: the user object as the connector (U-conn) and the web read it; others see [FILTERED]', async (t) => {
  const researcher = await signUpAs(platform, 'researcher')
  for (const path of [`/users/${owner.id}`, `/users/${owner.username}`, `/users/${researcher.id}`]) {
    const checked = await validate(path, 'User')
    t.equal(checked.status, 200, path)
    t.ok(checked.valid, `${path}: a valid User ${JSON.stringify(checked.errors ?? '')}`)
  }
  const me = await get('/me', owner.token)
  t.match(me, { id: owner.id, username: owner.username, profile_picture: String, location: { city: null, country_code: null }, devices: Array, email: `${owner.username}@example.org`, role: 'citizen', legacy_api_key: String })
  t.ok('url' in me, 'url')
  for (const [label, token] of [['anonymous', undefined], ['another user', stranger.token]] as const) {
    t.match(await get(`/users/${owner.id}`, token), { email: '[FILTERED]', legacy_api_key: '[FILTERED]', forwarding_token: '[FILTERED]', forwarding_username: '[FILTERED]' }, label)
  }
  const all = await runPython<{ errors: unknown[] }>('connector.py', { cmd: 'list', url: `${base}/users/`, model: 'User' })
  t.same(all.errors, [], 'get_users(): every user validates')
})

t.test('rule 30: world-map items carry the newer shape: location{…} and hardware{…}', async (t) => {
  const map = await runPython<{ errors: unknown[], items: Array<{ id: number }> }>('connector.py', { cmd: 'list', url: `${base}/devices/world_map`, model: 'ReducedDevice' })
  t.same(map.errors, [], 'get_world_map(): List[ReducedDevice]')
  t.ok(map.items.some((i) => i.id === kit.id))
  for (const [path, token] of [['/devices/world_map', undefined], ['/devices/fresh_world_map', owner.token]] as const) {
    const items = (await get(path, token)) as unknown as Json[]
    const item = items.find((i) => i.id === kit.id)
    t.match(item, {
      id: kit.id,
      name: 'Rooftop',
      state: 'has_published',
      system_tags: Array,
      user_tags: Array,
      last_reading_at: String,
      location: { latitude: Number, longitude: Number, city: 'Barcelona', country: 'Spain', exposure: 'outdoor' },
      hardware: { name: 'SmartCitizen Kit 2.3', type: 'SCK', version: '2.3', slug: 'sck:2,3' }
    }, path)
    t.ok(item !== undefined && 'description' in item && 'last_status_message' in (item.hardware as Json), `${path}: description and hardware.last_status_message`)
    t.ok(items.every((i) => typeof i.name === 'string'), `${path}: every name is a string`)
  }
})

t.test('rule 31: system_tags hold only indoor, outdoor, online, offline and new', async (t) => {
  await addDevice(platform, owner, { name: 'Kitchen', exposure: 'indoor' })
  await addDevice(platform, owner, { name: 'Cellar', is_private: true })
  const test = await call(`${base}/devices`, { method: 'POST', token: admin.token, json: { name: 'Test bench', exposure: 'indoor', latitude: 41.4, longitude: 2.2, is_test: 'True' } })
  t.equal(test.status, 201, 'an admin adds a test device')
  const lists: Array<[string, Json[]]> = [
    ['/devices/world_map', (await get('/devices/world_map')) as unknown as Json[]],
    ['/devices/fresh_world_map (owner)', (await get('/devices/fresh_world_map', owner.token)) as unknown as Json[]],
    ['/devices/fresh_world_map (admin)', (await get('/devices/fresh_world_map', admin.token)) as unknown as Json[]],
    ['/devices?per_page=1000 (admin)', (await get('/devices?per_page=1000', admin.token)) as unknown as Json[]]
  ]
  for (const [label, items] of lists) {
    const other = items.flatMap((i) => (i.system_tags as string[]).filter((tag) => !FIVE_SAFE_TAGS.includes(tag)).map((tag) => `${String(i.id)}: ${tag}`))
    t.same(other, [], `${label}: ${items.length} devices, no other tag (test devices included)`)
  }
})

t.test('rule 32: search answers a top-level array of typed items with the fields the web shows', async (t) => {
  await call(`${base}/me`, { method: 'PUT', token: stranger.token, json: { username: stranger.username, email: `${stranger.username}@example.org`, city: 'Barcelona', country: 'Spain', country_code: 'ES' } })
  const seen = new Set<string>()
  for (const q of ['Rooftop', stranger.username, 'Barcelona', 'Research']) {
    const res = await call(`${base}/search?q=${encodeURIComponent(q)}`)
    t.equal(res.status, 200, `q=${q}`)
    t.ok(Array.isArray(res.json), `q=${q}: an array`)
    for (const item of res.json as Json[]) {
      seen.add(String(item.type))
      t.type(item.id, 'number', `q=${q}: ${String(item.type)} id`)
      // Tag is the reference's own fifth type (behaviour.md §12): the web lists it by name and does nothing when chosen.
      t.ok(['User', 'Device', 'City', 'Country', 'Tag'].includes(String(item.type)), `q=${q}: type ${String(item.type)}`)
      const keys = item.type === 'User' ? ['username', 'profile_picture', 'city', 'country'] : item.type === 'Device' ? ['name', 'city', 'country'] : item.type === 'Tag' ? ['name'] : ['latitude', 'longitude', 'layer']
      for (const key of keys) t.ok(key in item, `q=${q}: ${String(item.type)} ${String(item.id)} has ${key}`)
      if (item.type === 'User') t.type(item.profile_picture, 'string', 'profile_picture is a string')
    }
  }
  t.ok(seen.has('User') && seen.has('Device'), `users and devices are found (${[...seen].join(', ')})`)
})

t.test('rule 33: POST /devices with the web\'s and the factory script\'s bodies', async (t) => {
  const web = await call(`${base}/devices`, { method: 'POST', token: owner.token, json: { name: 'New kit', description: 'from the web', exposure: 'indoor', latitude: 41.39, longitude: 2.17, is_private: false, hardware_version_override: '1.1', user_tags: 'Barcelona,Research' } })
  t.equal(web.status, 201, `W21 (${web.text.slice(0, 200)})`)
  t.match(web.json, { id: Number, name: 'New kit', user_tags: ['Barcelona', 'Research'], location: { exposure: 'indoor' } })
  const spaced = await call(`${base}/devices`, { method: 'POST', token: owner.token, json: { name: 'Spaced', exposure: 'outdoor', latitude: 41.39, longitude: 2.17, user_tags: 'Barcelona, Research' } })
  t.equal(spaced.status, 201)
  t.same((spaced.json as Json).user_tags, ['Barcelona', 'Research'], 'user_tags with spaces after the commas')
  for (const [label, account, isTest] of [['a researcher', await signUpAs(platform, 'researcher'), 'False'], ['an admin', admin, 'True']] as const) {
    const factory = await call(`${base}/devices`, { method: 'POST', token: account.token, json: { name: `Factory ${label}`, description: '', latitude: 41.39, longitude: 2.17, exposure: 'outdoor', user_tags: 'Research', is_test: isTest, postprocessing_attributes: { meta: '{"batch":"2026-11"}' } } })
    t.equal(factory.status, 201, `sck.py register() without device_token, ${label}, is_test "${isTest}" (${factory.text.slice(0, 200)})`)
    t.type((factory.json as Json).id, 'number')
  }
})

t.test('rule 33: POST /devices with a client-chosen device_token (sck.py register())', { todo: 'cannot hold by design: device tokens are made by the platform and a device_token in a body is a 422 (commit c647f5d, issue 34: chosen tokens could be found through "has already been taken"); the factory must read the token from the answer (or POST /devices/:id/device_token) instead of writing its own to the kit' }, async (t) => {
  const researcher = await signUpAs(platform, 'researcher')
  const chosen = '3f9a1c'
  const res = await call(`${base}/devices`, { method: 'POST', token: researcher.token, json: { name: 'Factory kit', device_token: chosen, description: '', latitude: 41.39, longitude: 2.17, exposure: 'outdoor', user_tags: 'Research', is_test: 'False', postprocessing_attributes: { meta: '' } } })
  t.equal(res.status, 201, `created (${res.text.slice(0, 200)})`)
  t.equal((res.json as Json | undefined)?.device_token, chosen, 'with the token the kit is configured with')
})

t.test('rule 34: PATCH /devices/:id with the web\'s edit-kit body (and its mac_address forms)', async (t) => {
  for (const [label, account] of [['a citizen', owner], ['a researcher', await signUpAs(platform, 'researcher')]] as const) {
    const device: Device = await addDevice(platform, account, { name: 'Editable' })
    const shown = await get(`/devices/${device.id}`, account.token)
    const postprocessing = { id: null, blueprint_url: null, hardware_url: null, forwarding_params: null, meta: null, latest_postprocessing: null, created_at: null, updated_at: null, device_id: device.id }
    for (const mac of ['', null, '5E:CF:7F:D1:75:78']) {
      const body = {
        name: 'Edited',
        description: 'edited by the web',
        postprocessing_attributes: postprocessing,
        exposure: 'indoor',
        latitude: 41.4,
        longitude: 2.18,
        is_private: false,
        enable_forwarding: false,
        precise_location: true,
        notify_low_battery: true,
        notify_stopped_publishing: false,
        mac_address: mac,
        user_tags: 'Barcelona, Research',
        hardware_name_override: 'My kit',
        updated_at: shown.updated_at
      }
      const res = await call(`${base}/devices/${device.id}`, { method: 'PATCH', token: account.token, json: body })
      t.equal(res.status, 200, `${label}, mac_address ${JSON.stringify(mac)} (${res.text.slice(0, 200)})`)
      if (res.status !== 200) continue
      t.match(res.json, { name: 'Edited', description: 'edited by the web', user_tags: ['Barcelona', 'Research'], notify: { low_battery: true, stopped_publishing: false }, location: { exposure: 'indoor' } }, `${label}: the fields were taken`)
      // A MAC is kept in lower case, as the reference keeps it.
      t.equal((res.json as Json).mac_address, mac === '' || mac === null ? null : mac.toLowerCase(), `${label}: mac_address ${JSON.stringify(mac)}`)
    }
  }
})

t.test('rule 35: PUT /me, PATCH /me (multipart profile_picture), DELETE /me and the password reset', async (t) => {
  const user = await signUp(platform)
  const put = await call(`${base}/me`, { method: 'PUT', token: user.token, json: { username: `${user.username}b`, password: 'another long password', email: `${user.username}b@example.org`, city: 'Girona', country: 'Spain', country_code: null, url: 'https://example.org/me' } })
  t.equal(put.status, 200, `PUT /me (${put.text.slice(0, 200)})`)
  t.match(put.json, { username: `${user.username}b`, url: 'https://example.org/me', location: { city: 'Girona' } })
  const renamed = `${user.username}b`
  const token = await logIn(platform, renamed, 'another long password')

  const form = new FormData()
  form.append('profile_picture', new Blob([PNG_1X1], { type: 'image/png' }), 'avatar.png')
  const avatar = await fetch(`${base}/me`, { method: 'PATCH', headers: { authorization: `Bearer ${token}` }, body: form })
  t.equal(avatar.status, 200, 'PATCH /me multipart')
  const picture = ((await avatar.json()) as Json).profile_picture
  t.ok(typeof picture === 'string' && /^https?:\/\//.test(picture), `the answer carries the new profile_picture URL (${String(picture)})`)
  if (typeof picture === 'string' && picture !== '') t.equal((await fetch(picture)).status, 200, 'which serves the picture')

  t.equal((await call(`${base}/password_resets`, { method: 'POST', json: { email_or_username: renamed } })).status, 200, 'POST /password_resets {email_or_username}')
  let code = ''
  await until(async () => {
    code = /password_resets\/([\w-]+)/.exec((await mailbox(platform)).find((m) => m.to === `${renamed}@example.org`)?.text ?? '')?.[1] ?? ''
    return code !== ''
  }, 20_000, 'the reset mail')
  const reset = await call(`${base}/password_resets/${code}`, { method: 'PATCH', json: { password: 'a third long password' } })
  t.equal(reset.status, 200, 'PATCH /password_resets/:code {password}')
  const fresh = await logIn(platform, renamed, 'a third long password')

  const deleted = await call(`${base}/me`, { method: 'DELETE', token: fresh })
  t.ok(deleted.status >= 200 && deleted.status < 300, `DELETE /me: ${deleted.status}`)
  t.equal((await call(`${base}/sessions`, { method: 'POST', json: { username: renamed, password: 'a third long password' } })).status >= 400, true, 'the account is gone')
})
