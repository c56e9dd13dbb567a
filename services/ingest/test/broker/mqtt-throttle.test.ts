import t, { type Test } from 'tap'
import mqtt, { type IClientOptions } from 'mqtt'
import type { ThrottleSettings } from '@esp/domain'
import { bearer, signUp, signUpAs } from '@esp/test-helpers/api'
import { connectMqtt, subscribeGranted, until } from '@esp/test-helpers/mqtt'
import { buildPlatform } from '@esp/test-helpers/platform'
import { makeDevice } from '@esp/db/testing'

// Issue 19: MQTT CONNECT with a user's secret counts with the HTTP failures of the same server.
const SMALL: ThrottleSettings = { accountFailures: 3, addressFailures: 6, windowSeconds: 600, lockoutSeconds: 300, maxLockoutSeconds: 1200 }

async function platform (t: Test) {
  let now = Date.parse('2026-11-25T12:00:00Z')
  const harness = await buildPlatform(t, { mqtt: true, clock: () => new Date(now), auth: { throttle: SMALL } })
  return { ...harness, mqttUrl: `mqtt://127.0.0.1:${harness.app.mqttListening?.port ?? 0}`, advance: (ms: number) => { now += ms } }
}

/** The CONNACK return code a CONNECT gets (0: accepted; mqtt.js reports a refusal as an error with the code). */
async function connack (url: string, options: IClientOptions): Promise<number> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  try {
    return await new Promise<number>((resolve, reject) => {
      client.once('connect', (packet) => { resolve(packet.returnCode ?? 0) })
      client.once('error', (err) => {
        const code = (err as { code?: unknown }).code
        if (typeof code === 'number') resolve(code)
        else reject(err)
      })
    })
  } finally {
    await client.endAsync(true)
  }
}

async function forwardingOf (harness: Awaited<ReturnType<typeof platform>>) {
  const researcher = await signUpAs(harness, 'researcher')
  const [row] = await harness.database.sql<{ forwarding_username: string, forwarding_token: string }[]>`
    select forwarding_username, forwarding_token from users where id = ${researcher.id}`
  if (row === undefined) throw new Error('no forwarding credentials')
  return { username: row.forwarding_username, token: row.forwarding_token, topic: `/forward/${row.forwarding_token}/device/+/readings` }
}

t.test('forwarding credentials: the limit-th wrong token locks; the right one gets CONNACK 5 until the lockout ends', async (t) => {
  const harness = await platform(t)
  const forwarding = await forwardingOf(harness)
  for (let i = 0; i < SMALL.accountFailures; i++) {
    const guess = await connectMqtt(t, harness.mqttUrl, { clientId: `guess${i}`, username: forwarding.username, password: `guess-${i}` })
    t.equal(await subscribeGranted(guess, forwarding.topic), 128, `guess ${i + 1}: connected, but not as the user`)
  }
  t.equal(await connack(harness.mqttUrl, { clientId: 'owner', username: forwarding.username, password: forwarding.token }), 5, 'the right credentials are refused: not authorized')
  harness.advance(SMALL.lockoutSeconds * 1000)
  const owner = await connectMqtt(t, harness.mqttUrl, { clientId: 'owner', username: forwarding.username, password: forwarding.token })
  t.equal(await subscribeGranted(owner, forwarding.topic), 0, 'after the lockout the owner gets in')
})

t.test('an access token as the password: bad ones count for the address, and HTTP and MQTT share the count', async (t) => {
  const harness = await platform(t)
  const user = await signUp(harness.app)
  const { id: device } = await makeDevice(harness.database, { ownerId: user.id, isPrivate: true, token: null })
  // Half the address's budget over MQTT, half over HTTP (inject comes from 127.0.0.1 as well).
  for (let i = 0; i < SMALL.addressFailures / 2; i++) {
    t.equal(await connack(harness.mqttUrl, { clientId: `forged${i}`, username: user.username, password: `eyJhbGciOiJIUzI1NiJ9.e30.forged${i}` }), 0, 'a bad token is not a user, and not refused')
    t.equal((await harness.app.inject({ url: '/v0/me', headers: bearer(`forged.token.${i}`) })).statusCode, 401)
  }
  t.equal(await connack(harness.mqttUrl, { clientId: 'forged', username: user.username, password: 'eyJhbGciOiJIUzI1NiJ9.e30.forged' }), 5, 'a bad token is refused while the address is locked')
  t.equal((await harness.app.inject({ url: '/v0/me', headers: bearer('forged.token.again') })).statusCode, 429, 'and over HTTP')
  // Issue 34: a valid token is never refused for the failures of others behind the same address.
  const valid = await connectMqtt(t, harness.mqttUrl, { clientId: 'app-now', username: user.username, password: user.token })
  t.equal(await subscribeGranted(valid, `devices/${device}/readings`), 0, 'a good token proves its user from the locked address')
  t.equal((await harness.app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode, 200, 'and over HTTP')
  harness.advance(SMALL.lockoutSeconds * 1000)
  const app = await connectMqtt(t, harness.mqttUrl, { clientId: 'app', username: user.username, password: user.token })
  t.equal(await subscribeGranted(app, `devices/${device}/readings`), 0, 'after the lockout the token proves its user again (a private device)')
})

t.test('devices are not users: while the address is locked they still connect and publish', async (t) => {
  const harness = await platform(t)
  const owner = await signUp(harness.app)
  const { id } = await makeDevice(harness.database, { ownerId: owner.id, token: 'f1e2d3', kitId: 26 })
  for (let i = 0; i < SMALL.addressFailures; i++) t.equal((await harness.app.inject({ url: '/v0/me', headers: bearer(`forged.token.${i}`) })).statusCode, 401)
  t.equal(await connack(harness.mqttUrl, { clientId: 'x', username: owner.username, password: 'eyJhbGciOiJIUzI1NiJ9.e30.forged' }), 5, 'the address is locked')
  // The firmware (client id only), the 2016 prototype (placeholder user/password), a token as username.
  for (const options of [{ clientId: 'f1e2d3' }, { clientId: 'f1e2d3', username: 'user', password: 'password' }, { clientId: 'integration', username: 'f1e2d3', password: 'password' }]) {
    const kit = await connectMqtt(t, harness.mqttUrl, options)
    await kit.publishAsync('device/sck/f1e2d3/readings/raw', '{t:2026-11-25T11:00:00Z,55:21.5}', { qos: 1 })
    await kit.endAsync()
  }
  await until(async () => Number((await harness.database.sql`select count(*)::int as n from readings where device_id = ${id}`)[0]?.n) >= 1, 5000, 'the reading')
  t.pass('every device form connected and published')
})

/** Publishes at QoS 1: true on PUBACK, false when the broker refuses it by closing the connection. */
async function acknowledged (client: mqtt.MqttClient, topic: string, payload: string): Promise<boolean> {
  return await new Promise<boolean>((resolve) => {
    const closed = (): void => { resolve(false) }
    client.once('close', closed)
    client.publish(topic, payload, { qos: 1 }, (err) => {
      client.off('close', closed)
      resolve(err === undefined || err === null)
    })
  })
}

const RAW = '{t:2026-11-25T11:00:00Z,55:21.5}'

async function kitWithToken (harness: Awaited<ReturnType<typeof platform>>, token: string) {
  const owner = await signUp(harness.app)
  const { id } = await makeDevice(harness.database, { ownerId: owner.id, token, kitId: 26 })
  const stored = async (): Promise<number> => Number((await harness.database.sql<{ n: number }[]>`select count(*)::int as n from readings where device_id = ${id}`)[0]?.n)
  return { owner, id, stored }
}

t.test('guessed device tokens: the limit-th distinct one locks the address out of publishing, the right token too, until the lockout ends', async (t) => {
  const harness = await platform(t)
  const kit = await kitWithToken(harness, 'a1b2c3')
  // The firmware's form: the token is the client id and names the topic, so a guess is a connection.
  for (let i = 0; i < SMALL.addressFailures; i++) {
    const guess = `zz00${i}x`
    const guesser = await connectMqtt(t, harness.mqttUrl, { clientId: guess })
    t.ok(await acknowledged(guesser, `device/sck/${guess}/readings/raw`, RAW), `guess ${i + 1} is acknowledged (stored nowhere)`)
    await guesser.endAsync()
  }
  const device = await connectMqtt(t, harness.mqttUrl, { clientId: 'a1b2c3' })
  t.notOk(await acknowledged(device, 'device/sck/a1b2c3/readings/raw', RAW), 'the right token is refused while the address is locked')
  t.equal(await kit.stored(), 0, 'nothing was stored')
  t.equal((await harness.app.inject({ url: '/v0/me', headers: bearer(kit.owner.token) })).statusCode, 200, 'a person signing in from the address is not locked out by it')
  harness.advance(SMALL.lockoutSeconds * 1000)
  const later = await connectMqtt(t, harness.mqttUrl, { clientId: 'a1b2c3' })
  t.ok(await acknowledged(later, 'device/sck/a1b2c3/readings/raw', RAW), 'after the lockout the kit publishes again')
  await until(async () => await kit.stored() >= 1, 5000, 'the reading')
})

t.test('a kit repeating one unknown token is one guess: the kits behind its address keep publishing', async (t) => {
  const harness = await platform(t)
  const kit = await kitWithToken(harness, 'c3d4e5')
  const archived = await connectMqtt(t, harness.mqttUrl, { clientId: 'gone00' })
  for (let i = 0; i < SMALL.addressFailures * 3; i++) t.ok(await acknowledged(archived, 'device/sck/gone00/readings/raw', RAW), `repeat ${i + 1}`)
  const device = await connectMqtt(t, harness.mqttUrl, { clientId: 'c3d4e5' })
  t.ok(await acknowledged(device, 'device/sck/c3d4e5/readings/raw', RAW), 'the neighbour publishes')
  await until(async () => await kit.stored() >= 1, 5000, 'the reading')
})

t.test('a CONNECT under a wrong token, as the client id or as the username, counts for the address once it publishes', async (t) => {
  const harness = await platform(t)
  const kit = await kitWithToken(harness, 'e5f6a7')
  for (let i = 0; i < SMALL.addressFailures; i++) {
    const guess = `yy00${i}y`
    const options = i % 2 === 0 ? { clientId: guess } : { clientId: `integration-${i}`, username: guess, password: 'password' }
    const guesser = await connectMqtt(t, harness.mqttUrl, options)
    t.ok(await acknowledged(guesser, `device/sck/${guess}/readings/raw`, RAW), `guess ${i + 1} (${'username' in options ? 'username' : 'client id'}) is acknowledged, as a known token's publish is`)
    await guesser.endAsync()
  }
  const device = await connectMqtt(t, harness.mqttUrl, { clientId: 'e5f6a7' })
  t.notOk(await acknowledged(device, 'device/sck/e5f6a7/readings/raw', RAW), 'then the address is locked out, the right token too')
  t.equal(await kit.stored(), 0, 'nothing was stored')
})

t.test('tokens of the older forms (before the platform made them all) keep working', async (t) => {
  const harness = await platform(t)
  const kit = await kitWithToken(harness, 'Older_form-token-1234')
  const device = await connectMqtt(t, harness.mqttUrl, { clientId: 'Older_form-token-1234' })
  t.ok(await acknowledged(device, 'device/sck/Older_form-token-1234/readings/raw', RAW), 'acknowledged')
  await until(async () => await kit.stored() >= 1, 5000, 'the reading')
})
