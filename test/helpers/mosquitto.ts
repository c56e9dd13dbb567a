import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort } from '@esp/db'

interface Tap { teardown: (fn: () => unknown) => void }

const BINARY = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto', '/usr/local/sbin/mosquitto'].find((p) => existsSync(p))

export interface MosquittoServer {
  url: string
  /** SIGKILL as a crash, SIGTERM as a maintenance (with persistence it then saves its sessions) */
  stop: (signal?: 'SIGKILL' | 'SIGTERM') => Promise<void>
  /** starts it again on the same port; resolves once it accepts connections */
  start: () => Promise<void>
}

/**
 * A Mosquitto broker of the test's own on a free port: the external broker of ingest's scale-out
 * mode (the machine's Mosquitto runs as a service; tests do not depend on its port). Debian's
 * mosquitto package is part of this machine kind, and .ci/run installs it where it is missing.
 * With `persistence`, sessions, subscriptions and queued messages survive a clean stop.
 */
export async function startMosquittoServer (t: Tap, options: { persistence?: boolean } = {}): Promise<MosquittoServer> {
  const binary = BINARY
  if (binary === undefined) throw new Error('mosquitto is not installed (Debian package mosquitto)')
  const port = await freePort()
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-mosquitto-'))
  // Started as root, Mosquitto drops to its own user before it saves its database here.
  if (options.persistence === true) chmodSync(dir, 0o777)
  const config = path.join(dir, 'mosquitto.conf')
  writeFileSync(config, [
    `listener ${port} 127.0.0.1`,
    'allow_anonymous true',
    ...(options.persistence === true ? ['persistence true', `persistence_location ${dir}/`] : ['persistence false']),
    'max_queued_messages 0',
    'log_dest stderr',
    'log_type error',
    'log_type warning',
    'log_type notice',
    'log_type information',
    ''
  ].join('\n'))
  let child: ChildProcess | undefined
  const start = async (): Promise<void> => {
    const started = spawn(binary, ['-c', config], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = started
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => { reject(new Error(`mosquitto did not start: ${out}`)) }, 10_000)
      const onData = (chunk: Buffer): void => {
        out += chunk.toString()
        if (/running/.test(out)) { clearTimeout(timer); resolve() }
      }
      started.stdout?.on('data', onData)
      started.stderr?.on('data', onData)
      started.on('exit', (code) => { clearTimeout(timer); reject(new Error(`mosquitto exited (${String(code)}): ${out}`)) })
    })
  }
  const stop = async (signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> => {
    const running = child
    child = undefined
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => { running.once('exit', resolve) })
    running.kill(signal)
    await exited
  }
  t.teardown(async () => {
    await stop('SIGTERM')
    rmSync(dir, { recursive: true, force: true })
  })
  await start()
  return { url: `mqtt://127.0.0.1:${port}`, stop, start }
}

export async function startMosquitto (t: Tap): Promise<string> {
  return (await startMosquittoServer(t)).url
}
