import type { UserRow } from '@esp/db'
import { formatTimestamp } from '../time.js'
import { countryName } from '../geo/country.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import type { UserView } from './user-schemas.js'

export type { UserRow }
export const FILTERED = '[FILTERED]'

export interface UserLocation { city: string | null, country: string | null, country_code: string | null }

export function userLocation (row: Pick<UserRow, 'city' | 'countryCode'>): UserLocation {
  return { city: row.city, country: countryName(row.countryCode), country_code: row.countryCode }
}

/** Absolute link to an uploaded picture, or null. */
export function pictureUrl (baseUrl: string, key: string | null): string | null {
  return key === null ? null : `${baseUrl}/v0/uploads/${key}`
}

/** Who may see a user's e-mail and keys: the user and admins (contract: User). */
export const canSeePrivateFields = (viewer: Viewer | null, userId: number): boolean => viewer?.id === userId || isAdmin(viewer)

export interface PresentUserOptions {
  viewer: Viewer | null
  baseUrl: string
  devices: unknown[]
  /** the creation response shows uuid null and the anonymous view (contract: POST /users) */
  creation?: boolean
}

/** The full user representation. Every key is present; blanks are null; secrets are [FILTERED]. */
export function presentUser (row: UserRow, options: PresentUserOptions): UserView {
  const own = options.creation !== true && canSeePrivateFields(options.viewer, row.id)
  // Forwarding credentials are the user's own secrets: not even admins see them (issue: Users).
  const self = options.creation !== true && options.viewer?.id === row.id
  const picture = pictureUrl(options.baseUrl, row.profilePicture)
  return {
    id: row.id,
    uuid: options.creation === true ? null : row.uuid,
    role: row.role,
    username: row.username,
    first_name: row.firstName,
    last_name: row.lastName,
    // The connector requires a string here (clients.md §4.29): "" when there is no picture.
    profile_picture: picture ?? '',
    avatar: picture,
    url: row.url,
    location: userLocation(row),
    joined_at: formatTimestamp(row.createdAt),
    created_at: formatTimestamp(row.createdAt),
    updated_at: formatTimestamp(row.updatedAt),
    email: own ? row.email : FILTERED,
    legacy_api_key: own ? row.legacyApiKey : FILTERED,
    forwarding_token: self ? row.forwardingToken : FILTERED,
    forwarding_username: self ? row.forwardingUsername : FILTERED,
    devices: options.devices
  }
}
