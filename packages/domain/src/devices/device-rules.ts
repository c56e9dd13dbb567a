import type { FieldErrors } from '../errors.js'
import { asBody, type Body, BodyReader, ID_MAX } from '../validation/body-reader.js'
import { freeJsonProblem } from '../validation/free-json.js'
import { isAdmin, isPrivileged, type Viewer } from '../auth/viewer.js'

/** A device write after parsing: undefined = not sent, null = cleared. */
export interface DeviceInput {
  name?: string
  description?: string | null
  macAddress?: string | null
  exposure?: 'indoor' | 'outdoor' | null
  latitude?: number | null
  longitude?: number | null
  elevation?: number | null
  preciseLocation?: boolean
  isPrivate?: boolean
  enableForwarding?: boolean
  isTest?: boolean
  notifyLowBattery?: boolean
  notifyStoppedPublishing?: boolean
  userTags?: string[]
  kitId?: number
  hardwareNameOverride?: string | null
  hardwareTypeOverride?: string | null
  hardwareVersionOverride?: string | null
  hardwareSlugOverride?: string | null
  meta?: unknown
  postprocessing?: PostprocessingInput
}

export interface PostprocessingInput {
  blueprintUrl?: string | null
  hardwareUrl?: string | null
  forwardingParams?: string | null
  meta?: string | null
  latestPostprocessing?: Date | null
}

const MAC = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/
const NAME_MAX = 255
const TEXT_MAX = 5000

/**
 * The nested forms some clients send (`location: {latitude}`, `data_policy: {is_private}`,
 * `notify: {low_battery}`, a Rails-style `device: {...}` wrapper) flattened into the flat keys of
 * the contract's request body; a flat key wins over a nested one.
 */
function flatten (body: Body): Body {
  const nested = (key: string): Body => {
    const value = body[key]
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Body : {}
  }
  const notify = nested('notify')
  return {
    ...nested('device'),
    ...nested('location'),
    ...nested('data_policy'),
    ...(notify.low_battery !== undefined ? { notify_low_battery: notify.low_battery } : {}),
    ...(notify.stopped_publishing !== undefined ? { notify_stopped_publishing: notify.stopped_publishing } : {}),
    ...Object.fromEntries(Object.entries(body).filter(([k]) => !['device', 'location', 'data_policy', 'notify'].includes(k)))
  }
}

/** Why a device_token in a body is refused, and what to do instead. */
export const DEVICE_TOKEN_NOT_SETTABLE = 'cannot be chosen: the platform makes device tokens (POST /v0/devices/:id/device_token issues a new one)'

export interface RuleOptions { creating: boolean, viewer: Viewer }

/**
 * Parses and checks a device body (contract: POST and PATCH /devices). Fields a role may not set
 * (forwarding and postprocessing below researcher, is_test below admin) are dropped, as with any
 * unpermitted parameter; `state` is automatic and never read from a body.
 */
export function parseDeviceBody (raw: unknown, options: RuleOptions): { input: DeviceInput, errors: FieldErrors } {
  const body = flatten(asBody(raw))
  const r = new BodyReader(body, options.creating)
  const input: DeviceInput = {}

  const name = r.text('name', { max: NAME_MAX, required: true })
  if (typeof name === 'string') input.name = name

  const description = r.text('description', { max: TEXT_MAX })
  if (description !== undefined) input.description = description

  if (r.has('mac_address')) {
    const mac = body.mac_address
    if (mac === null || mac === '') input.macAddress = null
    else if (typeof mac !== 'string' || !MAC.test(mac.trim())) r.add('mac_address', 'is invalid')
    else input.macAddress = mac.trim().replace(/-/g, ':').toLowerCase()
  }

  // Tokens are the platform's to make (issue 34): a chosen one could be planted, and a clash
  // with another device's would tell that it exists. Blank is what forms send when untouched.
  if (r.has('device_token') && body.device_token !== null && body.device_token !== '') {
    r.add('device_token', DEVICE_TOKEN_NOT_SETTABLE)
  }

  if (r.has('exposure')) {
    const exposure = body.exposure
    if (exposure === null || exposure === '') input.exposure = null
    else if (exposure === 'indoor' || exposure === 'outdoor') input.exposure = exposure
    else r.add('exposure', 'is not included in the list (indoor, outdoor)')
  }

  const latitude = r.number('latitude', -90, 90)
  const longitude = r.number('longitude', -180, 180)
  if (latitude !== undefined) input.latitude = latitude
  if (longitude !== undefined) input.longitude = longitude
  if ((latitude === null) !== (longitude === null) && latitude !== undefined && longitude !== undefined) r.add('latitude', 'and longitude are set or cleared together')
  const elevation = r.number('elevation', -1000, 10000)
  if (elevation !== undefined) input.elevation = elevation === null ? null : Math.round(elevation)

  const flags = {
    precise_location: 'preciseLocation',
    is_private: 'isPrivate',
    notify_low_battery: 'notifyLowBattery',
    notify_stopped_publishing: 'notifyStoppedPublishing'
  } as const
  for (const [field, key] of Object.entries(flags)) {
    const value = r.bool(field)
    if (value !== undefined) input[key] = value
  }
  if (isPrivileged(options.viewer)) {
    const forwarding = r.bool('enable_forwarding')
    if (forwarding !== undefined) input.enableForwarding = forwarding
  }
  if (isAdmin(options.viewer)) {
    const isTest = r.bool('is_test')
    if (isTest !== undefined) input.isTest = isTest
  }

  if (r.has('user_tags')) {
    const tags = body.user_tags
    const list = typeof tags === 'string' ? tags.split(',') : Array.isArray(tags) && tags.every((t) => typeof t === 'string') ? tags as string[] : null
    if (list === null) r.add('user_tags', 'must be comma-separated tag names')
    else input.userTags = [...new Set(list.map((t) => t.trim()).filter((t) => t !== ''))]
  }

  if (r.has('kit_id')) {
    const kit = r.number('kit_id', 1, ID_MAX)
    if (kit !== undefined && kit !== null) {
      if (Number.isInteger(kit)) input.kitId = kit
      else r.add('kit_id', 'must be an integer')
    }
  }

  for (const part of ['name', 'type', 'version', 'slug'] as const) {
    const value = r.text(`hardware_${part}_override`, { max: NAME_MAX })
    if (value !== undefined) input[`hardware${part[0]?.toUpperCase() ?? ''}${part.slice(1)}Override` as 'hardwareNameOverride'] = value
  }

  if (r.has('meta')) {
    const meta = body.meta
    const problem = freeJsonProblem(meta)
    if (problem !== null) r.add('meta', problem)
    else if (JSON.stringify(meta ?? null).length > 10_000) r.add('meta', 'is too large')
    else input.meta = meta
  }

  const post = body.postprocessing_attributes
  if (post !== undefined && post !== null && isPrivileged(options.viewer)) {
    if (typeof post !== 'object' || Array.isArray(post)) r.add('postprocessing_attributes', 'must be an object')
    else {
      const p = new BodyReader(post as Body)
      const result: PostprocessingInput = {}
      const blueprint = p.text('blueprint_url', { max: 2048 })
      if (blueprint !== undefined) result.blueprintUrl = blueprint
      const hardware = p.text('hardware_url', { max: 2048 })
      if (hardware !== undefined) result.hardwareUrl = hardware
      const params = p.text('forwarding_params', { max: 2048 })
      if (params !== undefined) result.forwardingParams = params
      const meta = (post as Body).meta
      const problem = meta === undefined ? null : freeJsonProblem(meta)
      if (problem !== null) p.add('meta', problem)
      else if (meta !== undefined) result.meta = meta === null ? null : typeof meta === 'string' ? meta : JSON.stringify(meta)
      const latest = (post as Body).latest_postprocessing
      if (latest !== undefined) {
        const at = latest === null ? null : new Date(String(latest))
        if (at !== null && Number.isNaN(at.getTime())) p.add('latest_postprocessing', 'is not a date or time')
        else result.latestPostprocessing = at
      }
      for (const [field, messages] of Object.entries(p.errors)) for (const m of messages) r.add(`postprocessing_attributes.${field}`, m)
      input.postprocessing = result
    }
  }
  return { input, errors: r.errors }
}
