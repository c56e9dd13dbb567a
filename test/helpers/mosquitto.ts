import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { freePort } from '@esp/db'

interface Tap { teardown: (fn: () => unknown) => void }

const BINARY = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto', '/usr/local/sbin/mosquitto'].find((p) => existsSync(p))

/**
 * A Mosquitto broker of the test's own on a free port: the external broker of ingest's scale-out
 * mode (the machine's Mosquitto runs as a service; tests do not depend on its port). Debian's
 * mosquitto package is part of this machine kind, and .ci/run installs it where it is missing.
 */
export async function startMosquitto (t: Tap): Promise<string> {
  if (BINARY === undefined) throw new Error('mosquitto is not installed (Debian package mosquitto)')
  const port = await freePort()
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-mosquitto-'))
  const config = path.join(dir, 'mosquitto.conf')
  writeFileSync(config, [
    `listener ${port} 127.0.0.1`,
    'allow_anonymous true',
    'persistence false',
    'max_queued_messages 0',
    'log_dest stderr',
    'log_type error',
    'log_type warning',
    'log_type notice',
    'log_type information',
    ''
  ].join('\n'))
  const child = spawn(BINARY, ['-c', config], { stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    child.kill('SIGTERM')
    rmSync(dir, { recursive: true, force: true })
  })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => { reject(new Error(`mosquitto did not start: ${out}`)) }, 10_000)
    const onData = (chunk: Buffer): void => {
      out += chunk.toString()
      if (/running/.test(out)) { clearTimeout(timer); resolve() }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`mosquitto exited (${String(code)}): ${out}`)) })
  })
  return `mqtt://127.0.0.1:${port}`
}
