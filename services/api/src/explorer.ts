import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { EXPLORER_PATH } from '@esp/http'

export interface ExplorerOptions {
  /** the built explorer (packages/explorer's dist) */
  dir: string
  /** a raster tile URL template; without one the page draws the countries it ships */
  tileUrl?: string | undefined
  tileAttribution?: string | undefined
}

const escapeAttribute = (text: string): string => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** The origin a tile template loads from, for the page's Content-Security-Policy (`{s}` is any subdomain). */
function tileSource (tileUrl: string | undefined): string {
  if (tileUrl === undefined) return ''
  const match = /^(https?:\/\/[^/]+)/.exec(tileUrl.replace(/\{s\}/g, '*'))
  return match?.[1] === undefined ? '' : ` ${match[1]}`
}

// Hashed names as Vite writes them, nothing else: no traversal, no directories.
const ASSET = /^[\w-][\w.-]*$/

export const explorerBuilt = (dir: string): boolean => existsSync(path.join(dir, 'index.html'))

/**
 * The explorer at /explorer/ (issue 22): index.html for every page of the app (it routes in the
 * browser), with this deployment's settings written in once; assets/ files carry a hash of their
 * content, so they are cached for a year and sent precompressed. None of it needs the database,
 * and none of it counts against the API's rate limit: loading the page is not calling the API.
 */
export async function explorerRoutes (app: FastifyInstance, options: ExplorerOptions): Promise<void> {
  const settings = { tileUrl: options.tileUrl ?? null, tileAttribution: options.tileAttribution ?? null, mqttPath: '/mqtt' }
  const html = readFileSync(path.join(options.dir, 'index.html'), 'utf8')
    .replace('<meta name="esp-config" content="{}">', `<meta name="esp-config" content="${escapeAttribute(JSON.stringify(settings))}">`)
  const policy = [
    "default-src 'self'",
    "script-src 'self'",
    // Leaflet and uPlot position their elements with inline styles.
    "style-src 'self' 'unsafe-inline'",
    `img-src 'self' data: blob:${tileSource(options.tileUrl)}`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
    "form-action 'self'"
  ].join('; ')

  await app.register(fastifyStatic, { root: path.join(options.dir, 'assets'), serve: false, preCompressed: true })
  const config = { rateLimit: false }

  app.get(`${EXPLORER_PATH}/assets/:file`, { schema: { hide: true }, config }, async (request, reply) => {
    const { file } = request.params as { file: string }
    if (!ASSET.test(file)) return await reply.callNotFound()
    return await reply.sendFile(file, { maxAge: 365 * 24 * 3600 * 1000, immutable: true })
  })

  const page = async (reply: FastifyReply): Promise<FastifyReply> => await reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('content-security-policy', policy)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .send(html)
  // The router ignores trailing slashes: this is /explorer/ too.
  app.get(EXPLORER_PATH, { schema: { hide: true }, config }, async (_request, reply) => await page(reply))
  app.get(`${EXPLORER_PATH}/*`, { schema: { hide: true }, config }, async (request, reply) => {
    // A file name that is not there is a 404; any other path is a page of the app.
    const rest = (request.params as { '*': string })['*']
    if (/\.[a-z0-9]{1,5}$/i.test(rest)) return await reply.callNotFound()
    return await page(reply)
  })
}

/** Browsers ask for HTML first; API clients (curl's * / *, JSON) do not. */
export const prefersHtml = (accept: string | undefined): boolean => accept !== undefined && /^\s*text\/html\s*(;|,|$)/i.test(accept)
