import type { Job } from 'pg-boss'
import type { Mailer, MailPayload } from '@esp/jobs'

/** Sends queued mail; a failure throws, so pg-boss retries with back-off instead of losing it. */
export async function handleMail (deps: { mailer: Mailer }, jobs: Job<MailPayload>[]): Promise<void> {
  for (const job of jobs) await deps.mailer.send(job.data)
}
