import { useEffect, useState } from 'preact/hooks'
import { api, errorText } from '../api.js'
import { Badge, conditionOf, ErrorNote, Field, Link, Time } from '../components.js'
import type { Device, DeviceSummary, User } from '../types.js'

interface DeviceForm { name: string, description: string, exposure: string, latitude: string, longitude: string, is_private: boolean }

const emptyForm: DeviceForm = { name: '', description: '', exposure: 'outdoor', latitude: '', longitude: '', is_private: false }

/** The API's body: coordinates as numbers, or left out when blank. */
function bodyOf (form: DeviceForm): Record<string, unknown> {
  const body: Record<string, unknown> = { name: form.name.trim(), description: form.description.trim(), exposure: form.exposure, is_private: form.is_private }
  if (form.latitude.trim() !== '') body.latitude = Number(form.latitude)
  if (form.longitude.trim() !== '') body.longitude = Number(form.longitude)
  return body
}

function DeviceFields ({ form, onChange }: { form: DeviceForm, onChange: (form: DeviceForm) => void }) {
  const set = (key: keyof DeviceForm) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement }) => { onChange({ ...form, [key]: e.currentTarget.value }) }
  const locate = (): void => {
    navigator.geolocation.getCurrentPosition((p) => { onChange({ ...form, latitude: p.coords.latitude.toFixed(5), longitude: p.coords.longitude.toFixed(5) }) })
  }
  return (
    <>
      <Field label='Name'><input name='name' required maxLength={255} value={form.name} onInput={set('name')} /></Field>
      <Field label='Description'><textarea name='description' rows={2} value={form.description} onInput={set('description')} /></Field>
      <div class='row'>
        <Field label='Placed'>
          <select name='exposure' value={form.exposure} onChange={set('exposure')}>
            <option value='outdoor'>Outdoors</option>
            <option value='indoor'>Indoors</option>
          </select>
        </Field>
        <Field label='Latitude'><input name='latitude' inputMode='decimal' pattern='-?[0-9]+([.][0-9]+)?' value={form.latitude} onInput={set('latitude')} /></Field>
        <Field label='Longitude'><input name='longitude' inputMode='decimal' pattern='-?[0-9]+([.][0-9]+)?' value={form.longitude} onInput={set('longitude')} /></Field>
      </div>
      {'geolocation' in navigator && <button type='button' class='link' onClick={locate}>Use my current location</button>}
      <label class='check'>
        <input type='checkbox' name='is_private' checked={form.is_private} onChange={(e) => { onChange({ ...form, is_private: e.currentTarget.checked }) }} />
        Private: only I can see this device and its data
      </label>
    </>
  )
}

export function MyDevicesPage () {
  const [user, setUser] = useState<User | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [creating, setCreating] = useState(false)
  const [form, setForm] = useState(emptyForm)
  const [formError, setFormError] = useState<string | null>(null)
  const [editing, setEditing] = useState<number | null>(null)

  const load = (): void => { api<User>('/me').then(setUser, (err: unknown) => { setError(errorText(err)) }) }
  useEffect(load, [])

  return (
    <main class='page'>
      <div class='title-row'>
        <h1>My devices</h1>
        {!creating && <button type='button' class='primary' onClick={() => { setCreating(true); setForm(emptyForm) }}>Add a device</button>}
      </div>
      <ErrorNote message={error} onRetry={load} />
      {creating && (
        <form
          class='form card' aria-label='New device' onSubmit={(e) => {
            e.preventDefault()
            setFormError(null)
            api<Device>('/devices', { method: 'POST', body: bodyOf(form) }).then((d) => {
              setCreating(false)
              setEditing(d.id)
              load()
            }, (err: unknown) => { setFormError(errorText(err)) })
          }}
        >
          <h2>New device</h2>
          <DeviceFields form={form} onChange={setForm} />
          <ErrorNote message={formError} />
          <div class='actions'>
            <button type='submit' class='primary'>Create device</button>
            <button type='button' onClick={() => { setCreating(false) }}>Cancel</button>
          </div>
        </form>
      )}
      {user === null && error === null && <p class='muted'>Loading…</p>}
      {user !== null && user.devices.length === 0 && !creating && <p class='muted'>You have no devices yet. Add one to get its token for your kit.</p>}
      <ul class='device-list'>
        {user?.devices.map((d) => (
          <li key={d.id} class='card' data-device-id={d.id}>
            <DeviceRow summary={d} open={editing === d.id} onToggle={() => { setEditing(editing === d.id ? null : d.id) }} onChanged={load} />
          </li>
        ))}
      </ul>
    </main>
  )
}

function DeviceRow ({ summary, open, onToggle, onChanged }: { summary: DeviceSummary, open: boolean, onToggle: () => void, onChanged: () => void }) {
  const [device, setDevice] = useState<Device | null>(null)
  const [form, setForm] = useState<DeviceForm | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [saved, setSaved] = useState(false)
  const [showToken, setShowToken] = useState(false)

  useEffect(() => {
    if (!open) return
    api<Device>(`/devices/${summary.id}`).then((d) => {
      setDevice(d)
      setForm({
        name: d.name,
        description: d.description ?? '',
        exposure: d.location?.exposure ?? 'outdoor',
        latitude: d.location?.latitude?.toString() ?? '',
        longitude: d.location?.longitude?.toString() ?? '',
        is_private: d.data_policy?.is_private ?? false
      })
    }, (err: unknown) => { setError(errorText(err)) })
  }, [open, summary.id])

  return (
    <>
      <div class='device-row'>
        <div>
          <Link to={`/devices/${summary.id}`} class='device-name'>{summary.name}</Link>
          <div class='meta'><Badge condition={conditionOf(summary)} /> <span class='muted small'>Last reading <Time iso={summary.last_reading_at} relative /></span></div>
        </div>
        <button type='button' aria-expanded={open} onClick={onToggle}>{open ? 'Close' : 'Manage'}</button>
      </div>
      {open && form !== null && device !== null && (
        <form
          class='form' aria-label={`Manage ${summary.name}`} onSubmit={(e) => {
            e.preventDefault()
            setError(null)
            setSaved(false)
            api<Device>(`/devices/${summary.id}`, { method: 'PATCH', body: bodyOf(form) }).then((d) => { setDevice(d); setSaved(true); onChanged() }, (err: unknown) => { setError(errorText(err)) })
          }}
        >
          <DeviceFields form={form} onChange={(f) => { setSaved(false); setForm(f) }} />
          <div class='token'>
            <span class='field-label'>Device token</span>
            <p class='hint'>Your kit sends readings with this token. Keep it secret.</p>
            {showToken
              ? <code class='secret' aria-label='Device token'>{device.device_token ?? '–'}</code>
              : <button type='button' onClick={() => { setShowToken(true) }}>Show the token</button>}
            {showToken && device.device_token != null && <button type='button' class='link' onClick={() => { void navigator.clipboard?.writeText(device.device_token ?? '') }}>Copy</button>}
          </div>
          <ErrorNote message={error} />
          {saved && <p class='ok' role='status'>Saved.</p>}
          <div class='actions'>
            <button type='submit' class='primary'>Save changes</button>
            <button
              type='button' class='danger' onClick={() => {
                if (!confirm(`Archive “${summary.name}”? It disappears from the map and stops taking readings; support can restore it for a while.`)) return
                api(`/devices/${summary.id}`, { method: 'DELETE' }).then(onChanged, (err: unknown) => { setError(errorText(err)) })
              }}
            >Archive device
            </button>
          </div>
        </form>
      )}
      {open && form === null && <ErrorNote message={error} />}
    </>
  )
}
