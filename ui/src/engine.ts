// The engine view: which path (CPU/GPU) took the packets, batch sizes, workers, GPU round trips.

import { drawHistogram } from "./charts";
import { $, el, int, num, setText } from "./format";
import type { Engine } from "./protocol";

const PATH_COLORS = ["#2563eb", "#7c3aed", "#0d9488", "#d97706", "#db2777"];

export class EngineView {
  private readonly name = $("engine-name");
  private readonly sharesBar = $("engine-shares-bar");
  private readonly shares = $("engine-shares");
  private readonly batch = $("engine-batch");
  private readonly threshold = $("engine-threshold");
  private readonly workers = $<HTMLTableSectionElement>("engine-workers");
  private readonly roundTripBox = $("engine-round-trip-box");
  private readonly roundTrip = $("engine-round-trip");
  private readonly roundTripMean = $("engine-round-trip-mean");
  private sharesShape = "";

  update(e: Engine): void {
    setText(this.name, e.name);
    setText(this.batch, e.batches > 0 ? num(e.batch_packets / e.batches) : "–");
    setText(this.threshold, e.threshold === null || e.threshold === undefined ? "–" : int(e.threshold));
    this.renderShares(e);
    this.renderWorkers(e);
    const rt = e.round_trip;
    const count = rt?.counts.reduce((a, b) => a + b, 0) ?? 0;
    this.roundTripBox.hidden = count === 0;
    if (count > 0) {
      drawHistogram(this.roundTrip, rt, "#7c3aed");
      setText(this.roundTripMean, rt.sum_us !== undefined ? `mean ${num(rt.sum_us / count)} µs over ${int(count)}` : "");
    }
  }

  private renderShares(e: Engine): void {
    const total = e.shares.reduce((a, s) => a + s.packets, 0);
    const shape = e.shares.map((s) => s.path).join("\u0000");
    if (shape !== this.sharesShape) {
      this.sharesShape = shape;
      this.sharesBar.replaceChildren(
        ...e.shares.map((_s, i) => {
          const seg = el("span", "seg");
          seg.style.background = PATH_COLORS[i % PATH_COLORS.length]!;
          return seg;
        }),
      );
      this.shares.replaceChildren(
        ...e.shares.map((s, i) => {
          const item = el("span", "share");
          item.dataset["path"] = s.path;
          const dot = el("i", "dot");
          dot.style.background = PATH_COLORS[i % PATH_COLORS.length]!;
          item.append(dot, el("span", "path", s.path), el("b", "pct"));
          return item;
        }),
      );
    }
    e.shares.forEach((s, i) => {
      const pct = total > 0 ? (100 * s.packets) / total : 0;
      (this.sharesBar.children[i] as HTMLElement).style.width = `${pct}%`;
      const item = this.shares.children[i] as HTMLElement;
      setText(item.querySelector(".pct")!, total > 0 ? `${num(pct)}%` : "–");
      item.title = `${int(s.packets)} packets in ${int(s.batches)} batches`;
    });
  }

  private renderWorkers(e: Engine): void {
    const body = this.workers;
    while (body.rows.length > e.workers.length) body.deleteRow(-1);
    while (body.rows.length < e.workers.length) {
      const tr = body.insertRow();
      for (let i = 0; i < 5; i++) tr.insertCell().className = i === 0 || i === 4 ? "" : "num";
    }
    e.workers.forEach((w, i) => {
      const tr = body.rows[i]!;
      tr.dataset["id"] = String(w.id);
      tr.classList.toggle("dead", !w.alive);
      const values = [
        String(w.id),
        int(w.legs),
        int(w.batches),
        w.batches > 0 ? num(w.batch_packets / w.batches) : "–",
        w.alive ? (w.transcoding ? "transcoding" : "alive") : "stopped",
      ];
      values.forEach((v, j) => setText(tr.cells[j]!, v));
      tr.title = `${int(w.batch_packets)} packets in ${int(w.batches)} batches`;
    });
  }
}
