import { render, type ComponentType } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import './styles.css'
import { Link } from './components.js'
import { interceptLinks, navigate, usePath } from './router.js'
import { onSession, session, setSession } from './session.js'
import { MapPage } from './pages/MapPage.js'
import { ProfilePage, SignInPage, SignUpPage } from './pages/AccountPages.js'
import { MyDevicesPage } from './pages/MyDevicesPage.js'

// The device page brings the chart library: it loads when first needed, not with the map.
const loadDevicePage = async (): Promise<ComponentType<{ id: number }>> => (await import('./pages/DevicePage.js')).DevicePage

function LazyDevicePage ({ id }: { id: number }) {
  const [Page, setPage] = useState<ComponentType<{ id: number }> | null>(null)
  useEffect(() => { void loadDevicePage().then((p) => { setPage(() => p) }) }, [])
  return Page === null ? <main class='page'><p class='muted' aria-busy='true'>Loading…</p></main> : <Page id={id} />
}

function useSession (): ReturnType<typeof session> {
  const [current, setCurrent] = useState(session)
  useEffect(() => onSession(() => { setCurrent(session()) }), [])
  return current
}

function NotFound () {
  return <main class='page narrow'><h1>Not found</h1><p>There is no page here. <Link to='/'>Go to the map</Link>.</p></main>
}

function SignInFirst ({ path }: { path: string }) {
  useEffect(() => { navigate(`/sign-in?next=${encodeURIComponent(path)}`, { replace: true }) }, [])
  return null
}

function SignedOutLinks () {
  return <><Link to='/sign-in'>Sign in</Link><Link to='/sign-up' class='button primary'>Sign up</Link></>
}

function SignedInLinks ({ username }: { username: string }) {
  return (
    <>
      <Link to='/my/devices'>My devices</Link>
      <Link to='/my/profile'>{username}</Link>
      <button type='button' class='link' onClick={() => { setSession(null); navigate('/') }}>Sign out</button>
    </>
  )
}

function App () {
  const path = usePath()
  const signedIn = useSession()
  const device = /^\/devices\/(\d{1,9})$/.exec(path)
  let page
  if (path === '/') page = <MapPage />
  else if (device !== null) page = <LazyDevicePage key={device[1]} id={Number(device[1])} />
  else if (path === '/sign-in') page = <SignInPage />
  else if (path === '/sign-up') page = <SignUpPage />
  else if (path === '/my/devices') page = signedIn === null ? <SignInFirst path={path} /> : <MyDevicesPage />
  else if (path === '/my/profile') page = signedIn === null ? <SignInFirst path={path} /> : <ProfilePage />
  else page = <NotFound />
  return (
    <>
      <a class='skip' href='#content'>Skip to content</a>
      <header class='top'>
        <Link to='/' class='brand'><span class='logo' aria-hidden='true' />Sensor network</Link>
        <nav aria-label='Main'>
          <Link to='/'>Map</Link>
          {signedIn === null ? <SignedOutLinks /> : <SignedInLinks username={signedIn.username} />}
          <a href='/docs' class='muted api'>API</a>
        </nav>
      </header>
      <div id='content' class={path === '/' ? 'content full' : 'content'}>{page}</div>
    </>
  )
}

const root = document.getElementById('app')
if (root !== null) {
  interceptLinks(root)
  render(<App />, root)
}
