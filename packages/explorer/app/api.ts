import { session, setSession } from './session.js'

/** An answer other than 2xx, in the API's one error shape. */
export class ApiError extends Error {
  constructor (readonly status: number, message: string, readonly fields: Record<string, string[]> | null, readonly retryAfter: number | null) {
    super(message)
  }

  /** What a person reads: the API's message, and for a 429 when to try again. */
  get readable (): string {
    if (this.status === 429) return `Too many requests. Try again in ${this.retryAfter ?? 60} seconds.`
    if (this.status === 0) return 'The server cannot be reached. Check your connection and try again.'
    if (this.status >= 500) return `The server could not answer (${this.status}). Try again in a moment.`
    const details = this.fields === null
      ? ''
      : Object.entries(this.fields).map(([field, problems]) => `${field.replace(/_/g, ' ')} ${problems.join(', ')}`).join('; ')
    return details === '' || this.message.includes(details) ? this.message : `${this.message}: ${details}`
  }
}

export interface RequestOptions { method?: string, body?: unknown, signal?: AbortSignal, auth?: boolean }

/** A call to the v0 API of this origin, as the signed-in user when there is one. */
export async function api<T> (path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' }
  const signedIn = session()
  if (signedIn !== null && options.auth !== false) headers.authorization = `Bearer ${signedIn.token}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  let response: Response
  try {
    response = await fetch(`/v0${path}`, {
      method: options.method ?? 'GET',
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.signal !== undefined ? { signal: options.signal } : {})
    })
  } catch (err) {
    if (options.signal?.aborted === true) throw err
    throw new ApiError(0, 'network error', null, null)
  }
  if (response.ok) {
    const text = await response.text()
    return (text === '' ? null : JSON.parse(text)) as T
  }
  let body: { message?: unknown, errors?: unknown } = {}
  try { body = await response.json() as typeof body } catch { /* not the error shape: the status says enough */ }
  const retry = Number(response.headers.get('retry-after'))
  const error = new ApiError(
    response.status,
    typeof body.message === 'string' ? body.message : response.statusText,
    typeof body.errors === 'object' && body.errors !== null ? body.errors as Record<string, string[]> : null,
    Number.isFinite(retry) && retry > 0 ? retry : null
  )
  // A token the API no longer takes (expired, revoked): sign out rather than fail every call.
  if (response.status === 401 && signedIn !== null && options.auth !== false) setSession(null)
  throw error
}

/** A message for anything a call threw. */
export const errorText = (err: unknown): string => err instanceof ApiError ? err.readable : 'Something went wrong. Try again.'
