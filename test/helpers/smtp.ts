import { SMTPServer } from 'smtp-server'

interface Tap { teardown: (fn: () => unknown) => void }

export interface Received { from: string, to: string[], subject: string, text: string, /** the message as it came over the wire */ raw: string }

/** Undoes quoted-printable: nodemailer wraps long lines (links) with soft breaks and escapes `=`. */
function decodeQuotedPrintable (body: string): string {
  return body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
}

/** A real SMTP server (smtp-server) on a free port that keeps every message it receives. */
export async function startSmtp (t: Tap): Promise<{ url: string, received: Received[], waitFor: (count: number) => Promise<Received[]>, stop: () => Promise<void>, start: () => Promise<void> }> {
  const received: Received[] = []
  const newServer = (): SMTPServer => new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData (stream, session, callback) {
      let data = ''
      stream.on('data', (chunk: Buffer) => { data += chunk.toString('utf8') })
      stream.on('end', () => {
        const [head = '', ...rest] = data.split(/\r?\n\r?\n/)
        const qp = /content-transfer-encoding:\s*quoted-printable/i.test(head)
        const body = rest.join('\n\n')
        received.push({
          from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: data,
          subject: /^Subject: (.*)$/m.exec(head)?.[1]?.trim() ?? '',
          text: qp ? decodeQuotedPrintable(body) : body
        })
        callback()
      })
    }
  })
  let server: SMTPServer | undefined = newServer()
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as { port: number }).port
  // Stopped and started again on the same port, as a mail server going away and coming back.
  const stop = async (): Promise<void> => {
    const running = server
    server = undefined
    if (running !== undefined) await new Promise<void>((resolve) => { running.close(() => { resolve() }) })
  }
  const start = async (): Promise<void> => {
    const next = newServer()
    await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', resolve))
    server = next
  }
  t.teardown(stop)
  const waitFor = async (count: number): Promise<Received[]> => {
    for (let i = 0; i < 200; i++) {
      if (received.length >= count) return received
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error(`expected ${count} messages at the SMTP server, got ${received.length}`)
  }
  return { url: `smtp://127.0.0.1:${port}`, received, waitFor, stop, start }
}
