import { useEffect, useRef } from 'preact/hooks'
import UPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { localTime } from './format.js'
import { isolatedPoints, type Series } from './history.js'

export type { Series }

const isolated = (u: UPlot, seriesIdx: number): number[] => isolatedPoints(u.data[seriesIdx] as ReadonlyArray<number | null>)

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
        // A value between two empty buckets has no line to be part of: it is drawn as a point.
        { label, stroke: '#117a65', fill: 'rgba(17, 122, 101, 0.08)', width: 1.5, spanGaps: false, points: { show: true, size: 5, fill: '#117a65', filter: isolated }, value: (_u, v) => v === null ? '–' : `${+v.toFixed(2)}${unit === null ? '' : ` ${unit}`}` }
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
