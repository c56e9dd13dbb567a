import { randomBytes } from 'node:crypto'
import { mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import nodemailer from 'nodemailer'
import type { MailPayload } from './queues.js'

export interface Mailer {
  send: (message: MailPayload) => Promise<void>
  close: () => void
  /** where mail goes, for the start-up banner */
  describe: string
}

/**
 * The one mailer: SMTP through nodemailer when an SMTP URL is configured, otherwise one JSON file
 * per message in the outbox folder. Only recipient and subject are logged: bodies carry reset
 * tokens and download links.
 */
export function createMailer (options: { smtpUrl?: string | undefined, from: string, outboxDir: string, log?: (fields: Record<string, unknown>, message: string) => void }): Mailer {
  if (options.smtpUrl !== undefined) {
    const transport = nodemailer.createTransport(options.smtpUrl)
    return {
      describe: `SMTP ${new URL(options.smtpUrl).host}`,
      send: async (message) => {
        await transport.sendMail({ from: options.from, to: message.to, subject: message.subject, text: message.text })
        options.log?.({ to: message.to, subject: message.subject }, 'mail sent')
      },
      close: () => { transport.close() }
    }
  }
  return {
    describe: `outbox ${options.outboxDir}`,
    send: async (message) => {
      await mkdir(options.outboxDir, { recursive: true })
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.json`
      // Written aside, then renamed: whoever reads the outbox never sees half a message.
      const partial = path.join(options.outboxDir, `.${name}.partial`)
      await writeFile(partial, JSON.stringify({ from: options.from, ...message }, null, 2), { mode: 0o600 })
      await rename(partial, path.join(options.outboxDir, name))
      options.log?.({ to: message.to, subject: message.subject, file: name }, 'mail written to the outbox')
    },
    close: () => {}
  }
}
