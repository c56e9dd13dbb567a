import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'

/** The pid of the embedded PostgreSQL under DATA_DIR, from its lock file (undefined without one). */
export function postmasterPid (dataDir: string): number | undefined {
  const file = path.join(dataDir, 'pg', 'postmaster.pid')
  if (!existsSync(file)) return undefined
  const pid = Number.parseInt(readFileSync(file, 'utf8').split('\n')[0] ?? '', 10)
  return Number.isInteger(pid) && pid > 0 ? pid : undefined
}

/** True once the process has exited (a zombie waiting for init to reap it counts as exited). */
export function processGone (pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH'
  }
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : ''
  return stat === '' || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')
}

/** Resolves true as soon as the process is gone, false after `ms`. */
export async function waitGone (pid: number, ms: number): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    if (processGone(pid)) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return processGone(pid)
}

export interface Account { token: string, device: number }

/** Signs a user up over HTTP, logs in and adds a public device, as a client of `pnpm start` would. */
export async function accountWithDevice (base: string, username: string): Promise<Account> {
  const json = { 'content-type': 'application/json' }
  const signup = await fetch(`${base}/v0/users`, { method: 'POST', headers: json, body: JSON.stringify({ username, email: `${username}@example.org`, password: 'a long password' }) })
  if (signup.status !== 201) throw new Error(`sign-up: ${signup.status} ${await signup.text()}`)
  const token = await logIn(base, username)
  const created = await fetch(`${base}/v0/devices`, {
    method: 'POST',
    headers: { ...json, authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'Balcony', exposure: 'outdoor', latitude: 41.3887912, longitude: 2.1589934 })
  })
  if (created.status !== 201) throw new Error(`device: ${created.status} ${await created.text()}`)
  const { id } = await created.json() as { id: number }
  return { token, device: id }
}

export async function logIn (base: string, username: string): Promise<string> {
  const session = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password: 'a long password' }) })
  if (session.status !== 200) throw new Error(`log-in: ${session.status} ${await session.text()}`)
  return (await session.json() as { access_token: string }).access_token
}

/** The body of a readings POST: one value of sensor 55 per timestamp. */
export const readingsBody = (times: readonly string[], value: number): string =>
  JSON.stringify({ data: times.map((at) => ({ recorded_at: at, sensors: [{ id: 55, value }] })) })
