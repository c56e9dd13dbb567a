import type { FastifyReply, FastifyRequest } from 'fastify'
import { baseUrl } from './server.js'

/**
 * `Total`, `Per-Page` and `Link` (first, prev, last, next) for a page of a list. Links are
 * absolute, keep every original parameter, and percent-encode commas, because clients split the
 * header on `,` (clients.md §4.11); `next` is left off on the last page.
 */
export function setPaginationHeaders (request: FastifyRequest, reply: FastifyReply, page: { page: number, perPage: number, total: number }): void {
  reply.header('total', String(page.total))
  reply.header('per-page', String(page.perPage))
  const last = Math.max(1, Math.ceil(page.total / page.perPage))
  const at = request.originalUrl.indexOf('?')
  const path = (at === -1 ? request.originalUrl : request.originalUrl.slice(0, at)).replace(/\/{2,}/g, '/')
  const params = new URLSearchParams(at === -1 ? '' : request.originalUrl.slice(at + 1))
  const link = (n: number, rel: string): string => {
    params.set('page', String(n))
    return `<${baseUrl(request)}${path}?${params.toString().replace(/,/g, '%2C')}>; rel="${rel}"`
  }
  const links: string[] = []
  if (page.page > 1) links.push(link(1, 'first'), link(Math.min(page.page - 1, last), 'prev'))
  if (page.page < last) links.push(link(last, 'last'), link(page.page + 1, 'next'))
  if (links.length > 0) reply.header('link', links.join(', '))
}

/** The raw query string as parameters: list filters use bracketed keys that route schemas do not declare. */
export function rawQuery (request: FastifyRequest): URLSearchParams {
  const at = request.url.indexOf('?')
  return new URLSearchParams(at === -1 ? '' : request.url.slice(at + 1))
}
