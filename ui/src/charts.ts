// Live charts (uPlot) fed by the summary, and histograms drawn as SVG bars.

import uPlot from "uplot";
import { bound, int, rate } from "./format";
import type { Histogram, Summary } from "./protocol";

/** The charts keep the last 5 minutes. */
const WINDOW_S = 300;
const HEIGHT = 150;

const BLUE = "#2563eb";
const TEAL = "#0d9488";
const AMBER = "#d97706";
const RED = "#dc2626";

interface Chart {
  plot: uPlot;
  data: (number | null)[][];
}

function axis(values?: (u: uPlot, splits: number[]) => string[]): uPlot.Axis {
  return {
    stroke: "#64748b",
    grid: { stroke: "#e2e8f0", width: 1 },
    ticks: { stroke: "#e2e8f0", width: 1 },
    font: "11px system-ui, sans-serif",
    ...(values ? { values } : {}),
  };
}

function makeChart(host: HTMLElement, series: uPlot.Series[], yValues: (u: uPlot, s: number[]) => string[]): Chart {
  const data: (number | null)[][] = series.map(() => []);
  data.unshift([]);
  const opts: uPlot.Options = {
    width: Math.max(200, host.clientWidth),
    height: HEIGHT,
    cursor: { drag: { x: false, y: false } },
    legend: { show: true, live: false },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [axis(), { ...axis(yValues), size: 56 }],
    series: [{}, ...series],
  };
  const plot = new uPlot(opts, data as uPlot.AlignedData, host);
  new ResizeObserver(() => {
    const width = Math.max(200, host.clientWidth);
    if (width !== plot.width) plot.setSize({ width, height: HEIGHT });
  }).observe(host);
  return { plot, data };
}

function line(label: string, stroke: string, fill?: string): uPlot.Series {
  return { label, stroke, width: 1.5, points: { show: false }, ...(fill ? { fill } : {}) };
}

const rateValues = (_u: uPlot, splits: number[]): string[] => splits.map((v) => rate(v));
const intValues = (_u: uPlot, splits: number[]): string[] => splits.map((v) => int(v));

export class LiveCharts {
  private readonly packets: Chart;
  private readonly calls: Chart;
  private readonly delay: Chart;
  private lastTime = -Infinity;

  constructor(packetsHost: HTMLElement, callsHost: HTMLElement, delayHost: HTMLElement) {
    this.packets = makeChart(packetsHost, [line("packets/s", BLUE, "rgba(37,99,235,0.08)")], rateValues);
    this.calls = makeChart(callsHost, [line("calls", TEAL, "rgba(13,148,136,0.08)")], intValues);
    this.delay = makeChart(delayHost, [line("p50 µs", AMBER), line("p99 µs", RED)], intValues);
  }

  /** Adds one summary sample to every chart and drops what is older than the window. */
  push(s: Summary): void {
    const t = (s.time_ms || Date.now()) / 1000;
    if (t <= this.lastTime) return;
    this.lastTime = t;
    this.add(this.packets, t, [s.packets_per_s]);
    this.add(this.calls, t, [s.calls]);
    this.add(this.delay, t, [s.delay_p50_us, s.delay_p99_us]);
  }

  private add(c: Chart, t: number, values: (number | null)[]): void {
    const [times, ...cols] = c.data as [number[], ...(number | null)[][]];
    times.push(t);
    values.forEach((v, i) => cols[i]!.push(v));
    let old = 0;
    while (old < times.length && times[old]! < t - WINDOW_S) old++;
    if (old > 0) for (const col of c.data) col.splice(0, old);
    c.plot.setData(c.data as uPlot.AlignedData);
  }
}

const SVG = "http://www.w3.org/2000/svg";

/** The smallest 1, 2 or 5 × 10^k not below n (a round top for the y axis). */
function niceCeil(n: number): number {
  const p = 10 ** Math.floor(Math.log10(n));
  return ([1, 2, 5, 10].find((m) => m * p >= n) ?? 10) * p;
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/**
 * Draws a histogram as bars into `host` (an SVG filling its width): x = bucket upper bound in µs,
 * y = count. A last count past the bounds is the +Inf bucket. Redraws only when the counts changed.
 */
export function drawHistogram(host: HTMLElement, h: Histogram | null | undefined, color = BLUE): void {
  // Drawn at the host's width, so that the text keeps its size (redrawn when the width changes).
  const W = Math.max(240, Math.round(host.clientWidth || 560));
  const key = h ? JSON.stringify([W, h.bounds_us, h.counts]) : "";
  if (host.dataset["key"] === key) return;
  host.dataset["key"] = key;
  host.replaceChildren();
  if (!h || h.counts.length === 0) return;

  const H = 170;
  const left = 44;
  const right = 8;
  const top = 10;
  const bottom = 40;
  const pw = W - left - right;
  const ph = H - top - bottom;
  const n = h.counts.length;
  const max = niceCeil(Math.max(1, ...h.counts));
  const bw = pw / n;

  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "histogram-svg" });
  const title = svg("title", {});
  title.textContent = "count by bucket upper bound (µs)";
  root.appendChild(title);

  for (const frac of [0, 0.5, 1]) {
    const y = top + ph - frac * ph;
    root.appendChild(svg("line", { x1: left, x2: W - right, y1: y, y2: y, class: "grid" }));
    const label = svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "tick" });
    label.textContent = int(Math.round(frac * max));
    root.appendChild(label);
  }

  const every = Math.max(1, Math.ceil(n / Math.floor(pw / 26)));
  h.counts.forEach((count, i) => {
    const x = left + i * bw;
    const bh = (count / max) * ph;
    const bar = svg("rect", {
      x: x + 1,
      y: top + ph - bh,
      width: Math.max(1, bw - 2),
      height: bh,
      fill: color,
      class: "bar",
      "data-bound": h.bounds_us[i] ?? "inf",
      "data-count": count,
    });
    const tip = svg("title", {});
    const upper = h.bounds_us[i];
    const last = h.bounds_us[h.bounds_us.length - 1];
    tip.textContent = upper !== undefined ? `≤ ${int(upper)} µs: ${int(count)}` : `> ${int(last)} µs: ${int(count)}`;
    bar.appendChild(tip);
    root.appendChild(bar);
    if (i % every === 0) {
      const cx = x + bw / 2;
      const label = svg("text", {
        x: cx,
        y: top + ph + 12,
        "text-anchor": "end",
        transform: `rotate(-40 ${cx} ${top + ph + 12})`,
        class: "tick",
      });
      label.textContent = bound(h.bounds_us[i]);
      root.appendChild(label);
    }
  });
  host.appendChild(root);
}

/** The MOS scale of the quality sparklines (rtpengine's MOS tops out at 4.5). */
const MOS_MIN = 1;
const MOS_MAX = 4.5;

/** A clock time "14:03:27" of a UNIX time in s. */
export function clock(unixS: number): string {
  return new Date(unixS * 1000).toTimeString().slice(0, 8);
}

/**
 * Draws a call's MOS over time into `host` as a small SVG line: x = report time (first to last sample),
 * y = MOS on a 1–4.5 scale. Samples without a MOS break the line; the lowest is marked. Redraws only
 * when the points changed.
 */
export function drawSparkline(host: HTMLElement, points: [number, number | null][]): void {
  const key = JSON.stringify(points);
  if (host.dataset["key"] === key) return;
  host.dataset["key"] = key;
  host.replaceChildren();
  const W = 240;
  const H = 52;
  const left = 22;
  const right = 6;
  const top = 5;
  const bottom = 5;
  const pw = W - left - right;
  const ph = H - top - bottom;
  const withMos = points.filter((p): p is [number, number] => p[1] !== null);
  const root = svg("svg", {
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    role: "img",
    class: "sparkline",
    "data-points": withMos.length,
  });
  const title = svg("title", {});
  const first = points[0]?.[0];
  const last = points[points.length - 1]?.[0];
  title.textContent =
    first === undefined || last === undefined
      ? "MOS over the call: no samples yet"
      : `MOS over the call: ${withMos.length} of ${points.length} samples with a MOS, ${clock(first)} to ${clock(last)}`;
  root.appendChild(title);
  const y = (mos: number): number => top + ph - ((Math.min(MOS_MAX, Math.max(MOS_MIN, mos)) - MOS_MIN) / (MOS_MAX - MOS_MIN)) * ph;
  for (const mos of [MOS_MIN, MOS_MAX]) {
    root.appendChild(svg("line", { x1: left, x2: W - right, y1: y(mos), y2: y(mos), class: "grid" }));
    const label = svg("text", { x: left - 4, y: y(mos) + 3, "text-anchor": "end", class: "tick" });
    label.textContent = String(mos);
    root.appendChild(label);
  }
  if (first !== undefined && last !== undefined) {
    const span = last - first;
    const x = (t: number): number => (span > 0 ? left + ((t - first) / span) * pw : left + pw / 2);
    // A line through each run of samples with a MOS.
    let run: string[] = [];
    const flush = (): void => {
      if (run.length > 1) root.appendChild(svg("polyline", { points: run.join(" "), class: "line" }));
      run = [];
    };
    for (const [t, mos] of points) {
      if (mos === null) flush();
      else run.push(`${x(t).toFixed(1)},${y(mos).toFixed(1)}`);
    }
    flush();
    // Each sample as a dot while they are few; the lowest always.
    const lowest = withMos.reduce<[number, number] | null>((lo, p) => (lo === null || p[1] < lo[1] ? p : lo), null);
    for (const p of withMos.length <= 60 ? withMos : []) {
      const dot = svg("circle", { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 1.8, class: "dot" });
      const tip = svg("title", {});
      tip.textContent = `${clock(p[0])}: MOS ${p[1].toFixed(1)}`;
      dot.appendChild(tip);
      root.appendChild(dot);
    }
    if (lowest) {
      const dot = svg("circle", { cx: x(lowest[0]).toFixed(1), cy: y(lowest[1]).toFixed(1), r: 2.6, class: "lowest" });
      const tip = svg("title", {});
      tip.textContent = `lowest: MOS ${lowest[1].toFixed(1)} at ${clock(lowest[0])}`;
      dot.appendChild(tip);
      root.appendChild(dot);
    }
  }
  host.appendChild(root);
}
