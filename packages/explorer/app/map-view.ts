import L from 'leaflet'
import 'leaflet/dist/leaflet.css'
import Supercluster from 'supercluster'
import { feature } from 'topojson-client'
import type { Feature, FeatureCollection, Geometry } from 'geojson'
import type { Topology } from 'topojson-specification'
import countriesUrl from 'world-atlas/countries-110m.json?url'
import { config } from './config.js'
import type { DeviceCondition } from './components.js'
import type { MapPoint } from './types.js'

interface PointProps { id: number, name: string, condition: DeviceCondition }
/** A group's counts by condition, and the sum and number of its members' values (colour by measurement). */
interface ClusterProps { online: number, offline: number, new: number, sum: number, valued: number }

/**
 * Markers coloured by a value instead of the condition: each device's value (null: none), the
 * colour of a value (null: the "no value" grey), and how a value reads in a tooltip.
 */
export interface Colouring {
  valueOf: (id: number) => number | null
  colourOf: (value: number | null) => string
  label: (value: number | null) => string
}

/** A surface under the markers: cells of a grid, each filled with its own colour. */
export interface Surface {
  cells: FeatureCollection
  colourOf: (feature: Feature) => string | null
}

/** The box in view, within the one world's longitudes and the map's latitudes. */
export interface ViewBox { west: number, south: number, east: number, north: number, zoom: number }
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
  private countries: L.GeoJSON | null = null
  private colouring: Colouring | null = null
  private surface: L.GeoJSON | null = null
  private readonly moved = new Set<() => void>()

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
    this.map.on('moveend', () => {
      this.draw()
      for (const listener of this.moved) listener()
    })
  }

  /** Called after each move or zoom ends; the returned function stops it. */
  onMoveEnd (listener: () => void): () => void {
    this.moved.add(listener)
    return () => { this.moved.delete(listener) }
  }

  /** The box in view (a view wider than the world is the world). */
  viewBox (): ViewBox {
    const bounds = this.map.getBounds()
    const wide = bounds.getEast() - bounds.getWest() >= 360
    const wrap = (lng: number): number => ((lng + 540) % 360) - 180
    return {
      west: wide ? -180 : wrap(bounds.getWest()),
      east: wide ? 180 : wrap(bounds.getEast()),
      south: Math.max(-85, bounds.getSouth()),
      north: Math.min(85, bounds.getNorth()),
      zoom: this.map.getZoom()
    }
  }

  /** Colours the markers by value (null: by condition again); groups by their members' mean. */
  colourBy (colouring: Colouring | null): void {
    this.colouring = colouring
    const element = this.map.getContainer()
    if (colouring === null) delete element.dataset.marks
    // Groups sum their members' values when made: made again for the new values.
    this.indexes.clear()
    this.draw()
  }

  /** The surface under the markers, on their canvas (a canvas of its own would take their pointer); null removes it. */
  showSurface (surface: Surface | null): void {
    this.surface?.remove()
    this.surface = null
    const element = this.map.getContainer()
    if (surface === null) { delete element.dataset.surfaceCells; return }
    const options: L.GeoJSONOptions & { renderer: L.Renderer } = {
      renderer: this.renderer,
      interactive: false,
      filter: (feature) => surface.colourOf(feature) !== null,
      style: (feature) => ({ stroke: false, fillColor: feature === undefined ? '#000' : surface.colourOf(feature) ?? '#000', fillOpacity: 0.7 })
    }
    this.surface = L.geoJSON(surface.cells, options).addTo(this.map)
    // Over the countries, under the devices (drawn in the order of this canvas's layers).
    this.surface.bringToBack()
    this.countries?.bringToBack()
    element.dataset.surfaceCells = String(this.surface.getLayers().length)
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
      this.countries = L.geoJSON(land, options).addTo(this.map).bringToBack()
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
    const colouring = this.colouring
    if (index === undefined) {
      index = new Supercluster<PointProps, ClusterProps>({
        radius: 56,
        minZoom: level,
        maxZoom: level,
        map: (p) => {
          const value = colouring === null ? null : colouring.valueOf(p.id)
          return { online: p.condition === 'online' ? 1 : 0, offline: p.condition === 'offline' ? 1 : 0, new: p.condition === 'new' ? 1 : 0, sum: value ?? 0, valued: value === null ? 0 : 1 }
        },
        reduce: (sum, p) => { sum.online += p.online; sum.offline += p.offline; sum.new += p.new; sum.sum += p.sum; sum.valued += p.valued }
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
    const colouring = this.colouring
    // Coloured by value, what each drawn device shows, for the tests and tools reading the page: [id, value, colour].
    const marks: Array<[number, number | null, string]> = []
    for (const item of items) {
      const [lng, lat] = item.geometry.coordinates as [number, number]
      const props = item.properties
      if ('cluster' in props && props.cluster) {
        const count = props.point_count
        const share = props.online / count
        const size = count < 10 ? 30 : count < 100 ? 36 : count < 1000 ? 44 : 52
        const label = textElement(String(props.point_count_abbreviated))
        label.style.width = `${size}px`
        label.style.height = `${size}px`
        let title = `${count} devices, ${props.online} online`
        if (colouring === null) {
          label.style.setProperty('--share', `${Math.round(share * 100)}%`)
        } else {
          const mean = props.valued === 0 ? null : props.sum / props.valued
          const colour = colouring.colourOf(mean)
          label.style.setProperty('--fill', colour)
          label.style.color = textOn(colour)
          label.dataset.mean = mean === null ? '' : String(mean)
          label.dataset.colour = colour
          title = mean === null ? `${count} devices, none with a value` : `${count} devices, mean ${colouring.label(mean)} (${props.valued} with a value)`
        }
        const marker = L.marker([lat, lng], {
          icon: L.divIcon({ className: colouring === null ? 'cluster' : 'cluster cluster-value', html: label, iconSize: [size, size] }),
          title,
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
        const value = colouring === null ? null : colouring.valueOf(point.id)
        const fillColor = colouring === null ? CONDITION_COLOUR[point.condition] : colouring.colourOf(value)
        if (colouring !== null) marks.push([point.id, value, fillColor])
        const marker = L.circleMarker([lat, lng], {
          renderer: this.renderer,
          radius: colouring === null ? 7 : 8,
          weight: 1.5,
          color: colouring === null ? '#fff' : '#1d252c',
          fillColor,
          fillOpacity: 0.95
        })
        const tip = colouring === null ? point.name : `${point.name}: ${colouring.label(value)}`
        // An element, never a string: Leaflet writes a string tooltip as HTML, and names are the owners'.
        marker.bindTooltip(() => textElement(tip), { direction: 'top', offset: [0, -6] })
        marker.on('click', () => { this.onOpen(point.id) })
        this.layer.addLayer(marker)
      }
    }
    if (colouring !== null) this.map.getContainer().dataset.marks = JSON.stringify(marks)
  }
}

/** Dark text on a light fill, white on a dark one (relative luminance). */
function textOn (hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }) as [number, number, number]
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.18 ? '#111' : '#fff'
}
