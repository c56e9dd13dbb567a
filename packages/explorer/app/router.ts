import { useEffect, useState } from 'preact/hooks'
import { BASE } from './config.js'

/** History-API routing under the explorer's path: /explorer/devices/12 is a page of its own. */
const listeners = new Set<() => void>()

export const currentPath = (): string => {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname
  return path === '' ? '/' : path
}

export function navigate (to: string, options: { replace?: boolean } = {}): void {
  const url = `${BASE}${to}`
  if (options.replace === true) history.replaceState(null, '', url)
  else history.pushState(null, '', url)
  window.scrollTo(0, 0)
  for (const listener of listeners) listener()
}

addEventListener('popstate', () => { for (const listener of listeners) listener() })

export function usePath (): string {
  const [path, setPath] = useState(currentPath)
  useEffect(() => {
    const update = (): void => { setPath(currentPath()) }
    listeners.add(update)
    // A child's effect may have navigated before this one subscribed (children's effects run first).
    update()
    return () => { listeners.delete(update) }
  }, [])
  return path
}

/** Follows in-app links without a reload; modified clicks and other origins go to the browser. */
export function interceptLinks (root: HTMLElement): void {
  root.addEventListener('click', (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    const anchor = (event.target as Element).closest('a')
    if (anchor === null || anchor.target !== '' || anchor.hasAttribute('download')) return
    const url = new URL(anchor.href, location.href)
    if (url.origin !== location.origin || !url.pathname.startsWith(`${BASE}/`)) return
    event.preventDefault()
    navigate(url.pathname.slice(BASE.length) + url.search)
  })
}

export const href = (path: string): string => `${BASE}${path}`
