import { useEffect, useRef } from 'preact/hooks'
import UPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { localTime } from './format.js'

export interface Series {
  /** bucket starts, seconds since the epoch, ascending */
  times: number[]
  /** null where a bucket has no readings: drawn as a gap */
  values: (number | null)[]
}

/** One sensor's history as a uPlot line; gaps stay gaps (the buckets' all_intervals nulls). */
export function Chart ({ series, unit, label, onDrawn }: { series: Series, unit: string | null, label: string, onDrawn?: () => void }) {
  const element = useRef<HTMLDivElement>(null)
  const plot = useRef<UPlot | null>(null)

  useEffect(() => {
    const host = element.current
    if (host === null) return
    const width = Math.max(280, host.clientWidth)
    const options: UPlot.Options = {
      width,
      height: 220,
      legend: { show: true, live: true },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: true } },
      axes: [
        { stroke: '#56606b', grid: { stroke: '#eef1f4' }, ticks: { stroke: '#dfe4e9' } },
        { stroke: '#56606b', grid: { stroke: '#eef1f4' }, ticks: { stroke: '#dfe4e9' }, size: 56, ...(unit !== null && unit !== '' ? { label: unit, labelSize: 18 } : {}) }
      ],
      series: [
        { label: 'Time', value: (_u, v) => v === null ? '–' : localTime(new Date(v * 1000).toISOString()) },
        { label, stroke: '#117a65', fill: 'rgba(17, 122, 101, 0.08)', width: 1.5, spanGaps: false, points: { show: false }, value: (_u, v) => v === null ? '–' : `${+v.toFixed(2)}${unit === null ? '' : ` ${unit}`}` }
      ],
      hooks: { draw: [() => { onDrawn?.() }] }
    }
    const chart = new UPlot(options, [series.times, series.values], host)
    plot.current = chart
    // The drawn data, for the browser tests to compare with the API's answer.
    Object.assign(host, { uplot: chart })
    const resize = new ResizeObserver(() => { chart.setSize({ width: Math.max(280, host.clientWidth), height: 220 }) })
    resize.observe(host)
    return () => { resize.disconnect(); chart.destroy(); plot.current = null }
  }, [series, unit, label])

  return <div class='chart' ref={element} />
}
