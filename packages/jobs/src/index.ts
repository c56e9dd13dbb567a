export { createBoss, type BossOptions, type PgBoss } from './boss.js'
export { queues, MailPayload, CsvArchivePayload, CsvImportPayload, PasswordResetPayload, ScheduledPayload, type QueueKey, type PayloadOf } from './queues.js'
export { sendJob, ensureQueues } from './send.js'
export { createMailer, type Mailer } from './mailer.js'
