import type { UserRole } from '@esp/db'

/** Who is calling: null for anonymous callers. */
export interface Viewer {
  id: number
  username: string
  role: UserRole
}

export const isAdmin = (viewer: Viewer | null): boolean => viewer?.role === 'admin'

/** Researchers and admins are not throttled and may forward data (contract: Roles). */
export const isPrivileged = (viewer: Viewer | null): boolean => viewer?.role === 'admin' || viewer?.role === 'researcher'
