/**
 * Versions by path (`/v0/...`), by no version at all (v0), or by the Accept header
 * `application/vnd.<vendor>; version=N` (contract: Versioning; behaviour.md §0). Routes live under
 * `/v<N>`; this maps every request onto that tree before routing.
 */
const UNVERSIONED = /^\/(health|metrics|docs|mqtt|explorer|broker)(\/|$)/
const VERSIONED = /^\/v\d+(\/|$)/

export function createUrlRewriter (vendor: string): (url: string, accept: string | undefined) => string {
  const escaped = vendor.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const acceptVersion = new RegExp(`application/vnd\\.${escaped}\\s*;\\s*version\\s*=\\s*(\\d+)`, 'i')
  return (url, accept) => {
    const queryAt = url.indexOf('?')
    let path = queryAt === -1 ? url : url.slice(0, queryAt)
    const query = queryAt === -1 ? '' : url.slice(queryAt)
    // Clients build paths by concatenation and send `//` (clients.md §4.2); `.json` is an old suffix.
    path = path.replace(/\/{2,}/g, '/')
    // The pages' own files keep their names (the explorer ships a .json asset).
    if (UNVERSIONED.test(path)) return path + query
    if (path.endsWith('.json')) path = path.slice(0, -'.json'.length)
    if (path === '') path = '/'
    if (VERSIONED.test(path)) return path + query
    const version = accept === undefined ? undefined : acceptVersion.exec(accept)?.[1]
    return `/v${version ?? '0'}${path === '/' ? '/' : path}${query}`
  }
}
