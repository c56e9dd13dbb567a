/** This deployment's settings, written into the page by the api when it serves index.html. */
export interface ExplorerConfig {
  /** a raster tile URL template ({z}/{x}/{y}); without one the map draws the countries it ships */
  tileUrl: string | null
  tileAttribution: string | null
  /** the MQTT-over-WebSocket path on this host */
  mqttPath: string
}

function read (): ExplorerConfig {
  const fallback: ExplorerConfig = { tileUrl: null, tileAttribution: null, mqttPath: '/mqtt' }
  const text = document.querySelector<HTMLMetaElement>('meta[name="esp-config"]')?.content ?? '{}'
  try {
    return { ...fallback, ...(JSON.parse(text) as Partial<ExplorerConfig>) }
  } catch {
    return fallback
  }
}

export const config = read()
/** Where the explorer lives; every in-app link is under it. */
export const BASE = import.meta.env.BASE_URL.replace(/\/$/, '')
