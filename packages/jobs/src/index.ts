export { createBoss, type BossOptions, type PgBoss } from './boss.js'
