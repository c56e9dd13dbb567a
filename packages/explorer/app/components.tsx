import type { ComponentChildren } from 'preact'
import { ago, localTime, utcTime } from './format.js'
import { href } from './router.js'

/** A time in the browser's zone; UTC on hover, the machine-readable one in datetime. */
export function Time ({ iso, relative = false }: { iso: string | null, relative?: boolean }) {
  if (iso === null) return <span class='muted'>never</span>
  return <time dateTime={iso} title={utcTime(iso)}>{relative ? ago(iso) : localTime(iso)}</time>
}

export type DeviceCondition = 'online' | 'offline' | 'new'

/** The map's colours: online within the platform's window, offline, or never published. */
export function conditionOf (device: { system_tags: string[], last_reading_at: string | null }): DeviceCondition {
  if (device.last_reading_at === null) return 'new'
  return device.system_tags.includes('online') ? 'online' : 'offline'
}

export const CONDITION_LABEL: Record<DeviceCondition, string> = { online: 'Online', offline: 'Offline', new: 'No data yet' }

export function Badge ({ condition }: { condition: DeviceCondition }) {
  return <span class={`badge badge-${condition}`}>{CONDITION_LABEL[condition]}</span>
}

export function ErrorNote ({ message, onRetry }: { message: string | null, onRetry?: () => void }) {
  if (message === null) return null
  return (
    <p class='error' role='alert'>
      {message}
      {onRetry !== undefined && <> <button type='button' class='link' onClick={onRetry}>Try again</button></>}
    </p>
  )
}

export function Link ({ to, children, class: className }: { to: string, children: ComponentChildren, class?: string }) {
  return <a href={href(to)} class={className}>{children}</a>
}

export function Field ({ label, hint, children }: { label: string, hint?: string, children: ComponentChildren }) {
  return (
    <label class='field'>
      <span class='field-label'>{label}</span>
      {children}
      {hint !== undefined && <span class='hint'>{hint}</span>}
    </label>
  )
}
