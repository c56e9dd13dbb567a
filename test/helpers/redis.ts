import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { freePort } from '@esp/db'

interface Tap { teardown: (fn: () => unknown) => void }

const BINARY = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p))

export interface RedisServer {
  url: string
  /** stops it, as a crash or a maintenance would */
  stop: () => Promise<void>
  /** starts it again on the same port */
  start: () => Promise<void>
}

/**
 * A Redis server of the test's own on a free port (the machine's Redis runs as a service; tests do
 * not depend on its port). Debian's redis-server is part of this machine kind.
 */
export async function startRedisServer (t: Tap): Promise<RedisServer> {
  const binary = BINARY
  if (binary === undefined) throw new Error('redis-server is not installed (Debian package redis-server)')
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async (): Promise<void> => {
    const started = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = started
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => { reject(new Error(`redis-server did not start: ${out}`)) }, 10_000)
      started.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes('Ready to accept connections')) { clearTimeout(timer); resolve() }
      })
      started.on('exit', (code) => { clearTimeout(timer); reject(new Error(`redis-server exited (${String(code)}): ${out}`)) })
    })
  }
  const stop = async (): Promise<void> => {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null) return
    const exited = new Promise((resolve) => { running.once('exit', resolve) })
    running.kill('SIGKILL')
    await exited
  }
  t.teardown(stop)
  await start()
  return { url: `redis://127.0.0.1:${port}`, stop, start }
}

export async function startRedis (t: Tap): Promise<string> {
  return (await startRedisServer(t)).url
}
