/**
 * The signed-in user: the API's access token, kept as the API expects it (sent as a Bearer header)
 * in this origin's localStorage, which no other origin can read. Signing out forgets it.
 */
export interface Session { token: string, username: string }

const KEY = 'esp.session'
const listeners = new Set<() => void>()

function load (): Session | null {
  try {
    const parsed = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Session | null
    return parsed !== null && typeof parsed.token === 'string' && typeof parsed.username === 'string' ? parsed : null
  } catch {
    return null
  }
}

let current = load()

export const session = (): Session | null => current

export function setSession (next: Session | null): void {
  current = next
  if (next === null) localStorage.removeItem(KEY)
  else localStorage.setItem(KEY, JSON.stringify(next))
  for (const listener of listeners) listener()
}

export function onSession (listener: () => void): () => void {
  listeners.add(listener)
  return () => { listeners.delete(listener) }
}

// Another tab signed in or out.
addEventListener('storage', (event) => {
  if (event.key !== KEY) return
  current = load()
  for (const listener of listeners) listener()
})
