/** Times are shown in the browser's time zone; the UTC time is the tooltip. */
const local = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' })

export const localTime = (iso: string): string => local.format(new Date(iso))
export const utcTime = (iso: string): string => `${iso.replace('T', ' ').replace(/(\.\d+)?Z$/, '')} UTC`

export function ago (iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000)
  const steps: [Intl.RelativeTimeFormatUnit, number][] = [['year', 31_536_000], ['month', 2_592_000], ['week', 604_800], ['day', 86_400], ['hour', 3600], ['minute', 60]]
  for (const [unit, size] of steps) {
    if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit)
  }
  return relative.format(seconds, 'second')
}

export function formatValue (value: number | null, unit: string | null): string {
  if (value === null || !Number.isFinite(value)) return '–'
  const digits = Math.abs(value) >= 1000 ? 0 : Math.abs(value) >= 10 ? 1 : 2
  const text = value.toLocaleString(undefined, { maximumFractionDigits: digits })
  return unit === null || unit === '' ? text : `${text} ${unit}`
}

export const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone
