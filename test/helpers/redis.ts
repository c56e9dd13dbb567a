import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { freePort } from '@esp/db'

interface Tap { teardown: (fn: () => unknown) => void }

const BINARY = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p))

/**
 * A Redis server of the test's own on a free port (the machine's Redis runs as a service; tests do
 * not depend on its port). Debian's redis-server is part of this machine kind.
 */
export async function startRedis (t: Tap): Promise<string> {
  if (BINARY === undefined) throw new Error('redis-server is not installed (Debian package redis-server)')
  const port = await freePort()
  const child = spawn(BINARY, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGTERM') })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => { reject(new Error(`redis-server did not start: ${out}`)) }, 10_000)
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('Ready to accept connections')) { clearTimeout(timer); resolve() }
    })
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`redis-server exited (${String(code)}): ${out}`)) })
  })
  return `redis://127.0.0.1:${port}`
}
