import L from 'leaflet'
import 'leaflet/dist/leaflet.css'
import Supercluster from 'supercluster'
import { feature } from 'topojson-client'
import type { Geometry } from 'geojson'
import type { Topology } from 'topojson-specification'
import countriesUrl from 'world-atlas/countries-110m.json?url'
import { config } from './config.js'
import type { DeviceCondition } from './components.js'
import type { MapPoint } from './types.js'

interface PointProps { id: number, name: string, condition: DeviceCondition }
interface ClusterProps { online: number, offline: number, new: number }
type Point = Supercluster.PointFeature<PointProps>

/** Past this zoom devices are no longer grouped. */
const CLUSTER_MAX_ZOOM = 14
/** The outline waits for the devices at most this long. */
const OUTLINE_WAITS_MS = 1000
/** What the canvas draws beyond the view, for panning: 30 % of the view, at most this many pixels a side. */
const CANVAS_MARGIN_PX = 300

/** A ring whose longitudes are shifted by whole turns so each follows its predecessor: no stroke back across the world. */
function unwrapRing (ring: number[][]): number[][] {
  let previous: number | null = null
  return ring.map(([lng = 0, lat = 0]) => {
    let x = lng
    if (previous !== null) {
      while (x - previous > 180) x -= 360
      while (previous - x > 180) x += 360
    }
    previous = x
    return [x, lat]
  })
}

function unwrapGeometry (geometry: Geometry): Geometry {
  if (geometry.type === 'Polygon') return { ...geometry, coordinates: geometry.coordinates.map(unwrapRing) }
  if (geometry.type === 'MultiPolygon') return { ...geometry, coordinates: geometry.coordinates.map((p) => p.map(unwrapRing)) }
  return geometry
}

/** A span holding text as text: what Leaflet is given instead of HTML strings. */
function textElement (text: string): HTMLSpanElement {
  const span = document.createElement('span')
  span.textContent = text
  return span
}

export const CONDITION_COLOUR: Record<DeviceCondition, string> = { online: '#138a5b', offline: '#d9822b', new: '#5b6bd6' }

/**
 * The map of devices: Leaflet on a canvas renderer, the countries drawn from the shipped
 * world-atlas outline unless a tile server is configured, and the devices clustered by
 * supercluster so that 10,000 of them stay a few hundred marks at any zoom. Each zoom level is
 * clustered on its own when first drawn (about a tenth of the work of every level at once, which
 * is what kept a map of 10,000 devices from being ready sooner); a group is opened by zooming
 * to its devices.
 */
export class DeviceMap {
  private readonly map: L.Map
  private readonly layer = L.layerGroup()
  private readonly renderer: L.Canvas
  private points: Point[] | null = null
  /** by whole zoom level, made when first drawn */
  private readonly indexes = new Map<number, Supercluster<PointProps, ClusterProps>>()
  private highlighted: L.CircleMarker | null = null
  private devicesShown: () => void = () => {}

  constructor (element: HTMLElement, private readonly onOpen: (id: number) => void) {
    // On a tall or wide screen a margin of 30 % is a canvas several times the view's size, and
    // sizing it (at every move) took as long as drawing the devices.
    this.renderer = L.canvas({ padding: Math.min(0.3, CANVAS_MARGIN_PX / Math.max(1, element.clientWidth, element.clientHeight)) })
    this.map = L.map(element, { preferCanvas: true, worldCopyJump: true, minZoom: 2, maxZoom: 18, zoomSnap: 0.5 })
    this.map.setView([30, 10], 2)
    this.map.attributionControl.setPrefix(false)
    if (config.tileUrl !== null) {
      L.tileLayer(config.tileUrl, { attribution: config.tileAttribution ?? '', maxZoom: 19 }).addTo(this.map)
    } else {
      element.classList.add('map-offline')
      // The devices first: drawing the outline takes as long as drawing them, and the map is
      // usable without it.
      const shown = new Promise<void>((resolve) => { this.devicesShown = resolve; setTimeout(resolve, OUTLINE_WAITS_MS) })
      void this.drawCountries(shown)
    }
    this.layer.addTo(this.map)
    this.map.on('moveend', () => { this.draw() })
  }

  private async drawCountries (devicesShown: Promise<void>): Promise<void> {
    try {
      const topology = await (await fetch(countriesUrl)).json() as Topology
      await devicesShown
      const object = topology.objects.countries
      if (object === undefined) return
      const countries = feature(topology, object)
      if (countries.type !== 'FeatureCollection') return
      // Antarctica has no devices and its ring runs along the map's edge; rings that cross the
      // antimeridian (Russia, Fiji) are kept continuous rather than drawn back across the world.
      const land = { ...countries, features: countries.features.filter((f) => f.id !== '010').map((f) => ({ ...f, geometry: unwrapGeometry(f.geometry) })) }
      // On the devices' own canvas, behind them: a second canvas added when the file arrived
      // (after the devices on a slow link) took the pointer from them, in its own pane too, and no
      // device had a tooltip or a click any more. Its paths are not interactive, so hovering and
      // clicking reach the devices drawn over them.
      const options: L.GeoJSONOptions & { renderer: L.Renderer } = {
        renderer: this.renderer,
        interactive: false,
        style: { color: '#a9b8c6', weight: 0.7, fillColor: '#f4f1ea', fillOpacity: 1 }
      }
      L.geoJSON(land, options).addTo(this.map).bringToBack()
    } catch {
      // Without the outline the devices still show, on the sea colour.
    }
  }

  show (devices: readonly MapPoint[]): void {
    this.points = devices.map((d) => ({
      type: 'Feature',
      geometry: { type: 'Point', coordinates: [d.longitude, d.latitude] },
      properties: { id: d.id, name: d.name, condition: d.condition }
    }))
    this.indexes.clear()
    this.draw()
    this.devicesShown()
  }

  /** The groups at a whole zoom level; past CLUSTER_MAX_ZOOM, that level's index answers the devices themselves. */
  private indexAt (zoom: number, points: Point[]): Supercluster<PointProps, ClusterProps> {
    const level = Math.min(zoom, CLUSTER_MAX_ZOOM)
    let index = this.indexes.get(level)
    if (index === undefined) {
      index = new Supercluster<PointProps, ClusterProps>({
        radius: 56,
        minZoom: level,
        maxZoom: level,
        map: (p) => ({ online: p.condition === 'online' ? 1 : 0, offline: p.condition === 'offline' ? 1 : 0, new: p.condition === 'new' ? 1 : 0 }),
        reduce: (sum, p) => { sum.online += p.online; sum.offline += p.offline; sum.new += p.new }
      }).load(points)
      this.indexes.set(level, index)
    }
    return index
  }

  focus (device: { latitude: number, longitude: number }): void {
    this.map.setView([device.latitude, device.longitude], Math.max(this.map.getZoom(), 13))
    this.highlighted?.remove()
    this.highlighted = L.circleMarker([device.latitude, device.longitude], { renderer: this.renderer, radius: 14, color: '#111', weight: 2, fill: false, interactive: false }).addTo(this.map)
  }

  invalidate (): void { this.map.invalidateSize() }

  destroy (): void { this.map.remove() }

  private draw (): void {
    const points = this.points
    if (points === null) return
    this.layer.clearLayers()
    const bounds = this.map.getBounds()
    const west = Math.max(-180, bounds.getWest())
    const east = Math.min(180, bounds.getEast())
    const zoom = Math.round(this.map.getZoom())
    const index = this.indexAt(zoom, points)
    const items = index.getClusters([west, Math.max(-85, bounds.getSouth()), east, Math.min(85, bounds.getNorth())], zoom)
    for (const item of items) {
      const [lng, lat] = item.geometry.coordinates as [number, number]
      const props = item.properties
      if ('cluster' in props && props.cluster) {
        const count = props.point_count
        const share = props.online / count
        const size = count < 10 ? 30 : count < 100 ? 36 : count < 1000 ? 44 : 52
        const label = textElement(String(props.point_count_abbreviated))
        label.style.setProperty('--share', `${Math.round(share * 100)}%`)
        label.style.width = `${size}px`
        label.style.height = `${size}px`
        const marker = L.marker([lat, lng], {
          icon: L.divIcon({ className: 'cluster', html: label, iconSize: [size, size] }),
          title: `${count} devices, ${props.online} online`,
          alt: `${count} devices`,
          keyboard: true
        })
        marker.on('click', () => {
          // To where its devices fill the view, and a level closer at least, where the group splits.
          const devices = L.latLngBounds(index.getLeaves(props.cluster_id, Infinity).map((leaf) => {
            const [x, y] = leaf.geometry.coordinates as [number, number]
            return [y, x]
          }))
          const fit = this.map.getBoundsZoom(devices, false, L.point(40, 40))
          this.map.flyTo(devices.getCenter(), Math.min(Math.max(fit, zoom + 1), 18), { duration: 0.4 })
        })
        this.layer.addLayer(marker)
      } else {
        const point = props as PointProps
        const marker = L.circleMarker([lat, lng], {
          renderer: this.renderer,
          radius: 7,
          weight: 1.5,
          color: '#fff',
          fillColor: CONDITION_COLOUR[point.condition],
          fillOpacity: 0.95
        })
        // An element, never a string: Leaflet writes a string tooltip as HTML, and names are the owners'.
        marker.bindTooltip(() => textElement(point.name), { direction: 'top', offset: [0, -6] })
        marker.on('click', () => { this.onOpen(point.id) })
        this.layer.addLayer(marker)
      }
    }
  }
}
