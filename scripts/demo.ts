/**
 * `pnpm demo [--url http://127.0.0.1:3000] [--username demo] [--password ...]`: fills a running
 * platform with a network to look at in the explorer (scripts/demo-world.ts): 20 public devices in
 * real cities, one with a year of hourly readings of 12 sensors. Signs the account up first when
 * it does not exist, and makes nothing when it has devices already.
 */
import { parseArgs } from 'node:util'
import { makeExplorerWorld } from './demo-world.js'

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: `http://127.0.0.1:${process.env.PORT ?? '3000'}` },
    username: { type: 'string', default: 'demo' },
    password: { type: 'string', default: 'demo network password' }
  }
})
const base = values.url.replace(/\/+$/, '')
const account = { username: values.username, password: values.password }

const signUp = await fetch(`${base}/v0/users`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ ...account, email: `${account.username}@example.org` })
}).catch((err: unknown) => {
  console.error(`no platform answers at ${base} (${String(err)}): start it with pnpm start, or pass --url`)
  process.exit(1)
})
// 422: the account is there already.
if (signUp.status !== 201 && signUp.status !== 422) {
  console.error(`signing up ${account.username} failed: ${signUp.status} ${await signUp.text()}`)
  process.exit(1)
}
const session = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(account) })
if (session.status !== 200) {
  console.error(`signing in as ${account.username} failed: ${session.status} ${await session.text()}`)
  process.exit(1)
}
const { access_token: token } = await session.json() as { access_token: string }
const me = await (await fetch(`${base}/v0/me`, { headers: { authorization: `Bearer ${token}` } })).json() as { devices: unknown[] }
if (me.devices.length > 0) {
  console.log(`${account.username} has ${me.devices.length} devices already: nothing made. The map: ${base}/explorer/`)
  process.exit(0)
}
const world = await makeExplorerWorld(base, account)
console.log([
  `made ${world.devices.length} devices owned by ${account.username} (password: ${account.password})`,
  `  a year of readings: ${base}/explorer/devices/${world.showcase.id}?range=year`,
  `  the map:            ${base}/explorer/`
].join('\n'))
