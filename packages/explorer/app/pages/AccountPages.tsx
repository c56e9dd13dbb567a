import { useEffect, useState } from 'preact/hooks'
import { api, errorText } from '../api.js'
import { ErrorNote, Field, Link } from '../components.js'
import { navigate } from '../router.js'
import { setSession } from '../session.js'
import type { User } from '../types.js'

async function signIn (username: string, password: string): Promise<void> {
  const { access_token: token } = await api<{ access_token: string }>('/sessions', { method: 'POST', body: { username, password }, auth: false })
  setSession({ token, username })
  // Signed in with the e-mail address, the name shown is still the username.
  const me = await api<User>('/me')
  setSession({ token, username: me.username })
}

/** Where to go after signing in: back where the person came from, or their devices. */
const next = (): string => {
  const to = new URLSearchParams(location.search).get('next')
  return to !== null && to.startsWith('/') && !to.startsWith('//') ? to : '/my/devices'
}

export function SignInPage () {
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  return (
    <main class='page narrow'>
      <h1>Sign in</h1>
      <form
        class='form' onSubmit={(e) => {
          e.preventDefault()
          setBusy(true)
          setError(null)
          signIn(username.trim(), password).then(() => { navigate(next(), { replace: true }) }, (err: unknown) => { setError(errorText(err)); setBusy(false) })
        }}
      >
        <Field label='Username or e-mail'><input name='username' required autoComplete='username' value={username} onInput={(e) => { setUsername(e.currentTarget.value) }} /></Field>
        <Field label='Password'><input name='password' type='password' required autoComplete='current-password' value={password} onInput={(e) => { setPassword(e.currentTarget.value) }} /></Field>
        <ErrorNote message={error} />
        <button type='submit' class='primary' disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
      <p>New here? <Link to='/sign-up'>Create an account</Link>.</p>
    </main>
  )
}

export function SignUpPage () {
  const [form, setForm] = useState({ username: '', email: '', password: '' })
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  const set = (key: keyof typeof form) => (e: { currentTarget: HTMLInputElement }) => { setForm({ ...form, [key]: e.currentTarget.value }) }
  return (
    <main class='page narrow'>
      <h1>Create an account</h1>
      <form
        class='form' onSubmit={(e) => {
          e.preventDefault()
          setBusy(true)
          setError(null)
          api('/users', { method: 'POST', body: { username: form.username.trim(), email: form.email.trim(), password: form.password }, auth: false })
            .then(async () => { await signIn(form.username.trim(), form.password) })
            .then(() => { navigate('/my/devices', { replace: true }) }, (err: unknown) => { setError(errorText(err)); setBusy(false) })
        }}
      >
        <Field label='Username'><input name='username' required autoComplete='username' value={form.username} onInput={set('username')} /></Field>
        <Field label='E-mail'><input name='email' type='email' required autoComplete='email' value={form.email} onInput={set('email')} /></Field>
        <Field label='Password' hint='At least 8 characters.'><input name='password' type='password' required minLength={8} autoComplete='new-password' value={form.password} onInput={set('password')} /></Field>
        <ErrorNote message={error} />
        <button type='submit' class='primary' disabled={busy}>{busy ? 'Creating…' : 'Create account'}</button>
      </form>
      <p>Have an account? <Link to='/sign-in'>Sign in</Link>.</p>
    </main>
  )
}

export function ProfilePage () {
  const [user, setUser] = useState<User | null>(null)
  const [form, setForm] = useState({ email: '', url: '', city: '', country_code: '', password: '' })
  const [error, setError] = useState<string | null>(null)
  const [saved, setSaved] = useState(false)
  useEffect(() => {
    api<User>('/me').then((u) => {
      setUser(u)
      setForm({ email: u.email ?? '', url: u.url ?? '', city: u.location?.city ?? '', country_code: u.location?.country_code ?? '', password: '' })
    }, (err: unknown) => { setError(errorText(err)) })
  }, [])
  const set = (key: keyof typeof form) => (e: { currentTarget: HTMLInputElement }) => { setSaved(false); setForm({ ...form, [key]: e.currentTarget.value }) }
  if (user === null) return <main class='page narrow'><h1>My profile</h1><ErrorNote message={error} />{error === null && <p class='muted'>Loading…</p>}</main>
  return (
    <main class='page narrow'>
      <h1>My profile</h1>
      <p class='muted'>Signed in as <strong>{user.username}</strong> ({user.role}).</p>
      <form
        class='form' onSubmit={(e) => {
          e.preventDefault()
          setError(null)
          const body: Record<string, string | null> = { email: form.email.trim(), url: form.url.trim() || null, city: form.city.trim() || null, country_code: form.country_code.trim().toUpperCase() || null }
          if (form.password !== '') body.password = form.password
          api<User>('/me', { method: 'PATCH', body }).then((u) => { setUser(u); setForm({ ...form, password: '' }); setSaved(true) }, (err: unknown) => { setError(errorText(err)) })
        }}
      >
        <Field label='E-mail'><input name='email' type='email' required value={form.email} onInput={set('email')} /></Field>
        <Field label='Web page'><input name='url' type='url' value={form.url} onInput={set('url')} placeholder='https://' /></Field>
        <div class='row'>
          <Field label='City'><input name='city' value={form.city} onInput={set('city')} /></Field>
          <Field label='Country code' hint='Two letters, e.g. ES'><input name='country_code' value={form.country_code} maxLength={2} onInput={set('country_code')} /></Field>
        </div>
        <Field label='New password' hint='Leave empty to keep the current one.'><input name='password' type='password' minLength={8} autoComplete='new-password' value={form.password} onInput={set('password')} /></Field>
        <ErrorNote message={error} />
        {saved && <p class='ok' role='status'>Saved.</p>}
        <button type='submit' class='primary'>Save</button>
      </form>
    </main>
  )
}
