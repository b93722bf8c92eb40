// The detail panel of one call: its legs (with direction controls), every counter per stream and leg,
// and the delay histogram. Updated in place every interval; rebuilt only when its shape changes.

import { drawHistogram } from "./charts";
import { $, age, drops, el, int, micros, named, setText } from "./format";
import {
  DIRECTIONS,
  type CallRow,
  type Detail,
  type Direction,
  type RecordAction,
  type Recording,
  type StreamSide,
} from "./protocol";

export interface DetailHandlers {
  close(): void;
  direction(id: string, tag: string, direction: Direction): number;
  end(id: string): void;
  record(id: string, action: RecordAction): void;
}

/** The counters shown first, in this order; any other field of a side follows, then drops by reason. */
const ORDER = [
  "protocol",
  "suite",
  "direction",
  "local",
  "peer",
  "rtcp_mux",
  "packets_in",
  "bytes_in",
  "packets_out",
  "bytes_out",
  "delay_avg_us",
  "delay_max_us",
  "last_packet_ms",
];

const LABELS: Record<string, string> = {
  rtcp_mux: "RTCP mux",
  packets_in: "packets in",
  bytes_in: "bytes in",
  packets_out: "packets out",
  bytes_out: "bytes out",
  delay_avg_us: "delay avg",
  delay_max_us: "delay max",
  last_packet_ms: "last packet",
};

function label(field: string): string {
  if (field.startsWith("drops.")) return `drops: ${field.slice(6)}`;
  return LABELS[field] ?? field.replace(/_/g, " ");
}

function value(side: StreamSide, field: string): string {
  if (field.startsWith("drops.")) return int(side.drops?.[field.slice(6)] ?? 0);
  const v = side[field];
  if (v === null || v === undefined) return "–";
  if (field.startsWith("delay_") && typeof v === "number") return micros(v);
  if (field === "last_packet_ms" && typeof v === "number") {
    // An epoch time in ms (else: ms since the last packet).
    const ago = v > 1e12 ? Math.max(0, Date.now() - v) : v;
    return ago < 1000 ? `${int(ago)} ms ago` : `${age(ago / 1000)} ago`;
  }
  if (typeof v === "number") return int(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

function fields(sides: StreamSide[]): string[] {
  const keys = new Set<string>();
  const reasons = new Set<string>();
  for (const s of sides) {
    for (const k of Object.keys(s)) if (k !== "tag" && k !== "drops") keys.add(k);
    for (const r of Object.keys(s.drops ?? {})) reasons.add(r);
  }
  const known = ORDER.filter((k) => keys.has(k));
  const rest = [...keys].filter((k) => !ORDER.includes(k)).sort();
  return [...known, ...rest, ...[...reasons].sort().map((r) => `drops.${r}`)];
}

export class DetailView {
  readonly panel = $("detail");
  private readonly idEl = $("detail-id");
  private readonly state = $("detail-state");
  private readonly facts = $("detail-facts");
  private readonly legsBody = $<HTMLTableSectionElement>("detail-legs-body");
  private readonly streamsEl = $("detail-streams");
  private readonly histogram = $("detail-histogram");
  private readonly histogramTotal = $("detail-histogram-total");
  private readonly endButton = $<HTMLButtonElement>("detail-end");
  /** Record (or resume), pause, stop: shown as the call's recording allows. */
  private readonly recordButtons: [HTMLButtonElement, RecordAction][] = [
    [$<HTMLButtonElement>("detail-record"), "start-recording"],
    [$<HTMLButtonElement>("detail-record-pause"), "pause-recording"],
    [$<HTMLButtonElement>("detail-record-stop"), "stop-recording"],
  ];
  private recording: Recording | null = null;
  private recordable = false;

  private id: string | null = null;
  private readOnly = false;
  private ended = false;
  private shape = "";
  private legsShape = "";
  private cells = new Map<string, HTMLElement>();
  private selects = new Map<string, HTMLSelectElement>();
  /** Direction edits not yet answered, by leg tag: the select keeps the chosen value meanwhile. */
  private pending = new Map<string, number>();

  constructor(private readonly on: DetailHandlers) {
    $("detail-close").addEventListener("click", () => this.on.close());
    this.endButton.addEventListener("click", () => {
      if (this.id !== null) this.on.end(this.id);
    });
    for (const [button, action] of this.recordButtons) {
      button.addEventListener("click", () => {
        if (this.id !== null) this.on.record(this.id, action);
      });
    }
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && this.id !== null) this.on.close();
    });
  }

  /** The call shown (null when closed). */
  get current(): string | null {
    return this.id;
  }

  /** Whether the call shown has ended (its detail was removed). */
  get isEnded(): boolean {
    return this.ended;
  }

  open(id: string): void {
    this.id = id;
    this.ended = false;
    this.shape = "";
    this.legsShape = "";
    this.cells.clear();
    this.selects.clear();
    this.pending.clear();
    setText(this.idEl, id);
    this.setState("waiting for data…", "");
    this.facts.replaceChildren();
    this.legsBody.replaceChildren();
    this.streamsEl.replaceChildren();
    drawHistogram(this.histogram, null);
    setText(this.histogramTotal, "");
    this.panel.hidden = false;
    this.endButton.hidden = this.readOnly;
    this.recording = null;
    this.recordable = false;
    this.showRecordButtons();
    document.body.classList.add("detail-open");
  }

  close(): void {
    this.id = null;
    this.panel.hidden = true;
    document.body.classList.remove("detail-open");
  }

  setReadOnly(readOnly: boolean): void {
    this.readOnly = readOnly;
    this.endButton.hidden = readOnly || this.ended;
    this.showRecordButtons();
    for (const s of this.selects.values()) s.disabled = readOnly || this.ended;
  }

  /** The answer (inform or error) to an edit: a direction edit no longer holds its select. */
  answered(ref: number): void {
    for (const [tag, r] of this.pending) if (r === ref) this.pending.delete(tag);
  }

  markEnded(id: string): void {
    if (id !== this.id) return;
    this.ended = true;
    this.setState("ended", "bad");
    this.endButton.hidden = true;
    this.showRecordButtons();
    for (const s of this.selects.values()) s.disabled = true;
  }

  /** Record when not recording (Resume when paused), Pause while recording, Stop while it has one. */
  private showRecordButtons(): void {
    const can = this.recordable && !this.readOnly && !this.ended;
    const state = this.recording?.state;
    const [record, pause, stop] = this.recordButtons.map(([b]) => b) as [
      HTMLButtonElement,
      HTMLButtonElement,
      HTMLButtonElement,
    ];
    record.hidden = !can || state === "recording";
    setText(record, state === "paused" ? "Resume recording" : "Record");
    pause.hidden = !can || state !== "recording";
    stop.hidden = !can || state === undefined;
  }

  update(id: string, d: Detail): void {
    if (id !== this.id || this.ended) return;
    this.setState("live", "ok");
    this.recording = d.recording ?? null;
    this.recordable = d.recordable ?? false;
    this.showRecordButtons();
    this.renderFacts(d.call);
    this.renderLegs(d.call);
    this.renderStreams(d);
    drawHistogram(this.histogram, d.histogram);
    const total = d.histogram?.counts.reduce((a, b) => a + b, 0) ?? 0;
    setText(this.histogramTotal, `${int(total)} packets`);
  }

  private setState(text: string, cls: string): void {
    setText(this.state, text);
    this.state.className = `pill ${cls}`;
  }

  private renderFacts(c: CallRow): void {
    const facts: [string, string, string?][] = [
      ["tags", `${c.from_tag} ⇄ ${c.to_tag ?? "–"}`],
      ["age", age(c.age_s)],
      ["worker", String(c.worker)],
      ["answered", c.answered ? "yes" : "no"],
      ["codecs", `${c.codecs}${c.transcoded ? " (transcoded)" : ""}`],
      ["packets in / out", `${int(c.packets_in)} / ${int(c.packets_out)}`],
      ["lost", int(c.lost)],
      ["dropped", int(c.dropped), drops(c.drops)],
      ["delay p50 / p99", `${micros(c.delay_p50_us)} / ${micros(c.delay_p99_us)}`],
      ["recording", this.recording ? this.recording.state : "no", this.recording?.file],
    ];
    if (this.facts.childElementCount !== facts.length) {
      this.facts.replaceChildren(
        ...facts.map(([k]) => {
          const div = el("div", "fact");
          div.append(el("span", "k", k), el("span", "v"));
          return div;
        }),
      );
    }
    facts.forEach(([, v, title], i) => {
      const span = this.facts.children[i]!.lastElementChild as HTMLElement;
      setText(span, v);
      span.title = title ?? "";
    });
  }

  private renderLegs(c: CallRow): void {
    const shape = c.legs.map((l) => l.tag).join("\u0000");
    if (shape !== this.legsShape) {
      this.legsShape = shape;
      this.selects.clear();
      this.legsBody.replaceChildren(
        ...c.legs.map((leg) => {
          const tr = el("tr");
          tr.dataset["tag"] = leg.tag;
          for (const k of ["tag", "addr", "codec"]) tr.appendChild(el("td", `l-${k}`));
          const dirTd = el("td", "l-direction");
          const select = el("select", "direction");
          select.dataset["tag"] = leg.tag;
          for (const d of DIRECTIONS) {
            const option = el("option", undefined, d);
            option.value = d;
            select.appendChild(option);
          }
          select.value = leg.direction;
          select.disabled = this.readOnly;
          select.addEventListener("change", () => {
            if (this.id === null) return;
            this.pending.set(leg.tag, this.on.direction(this.id, leg.tag, select.value as Direction));
          });
          this.selects.set(leg.tag, select);
          dirTd.appendChild(select);
          tr.appendChild(dirTd);
          for (const k of ["packets", "lost", "dropped"]) tr.appendChild(el("td", `l-${k} num`));
          return tr;
        }),
      );
    }
    c.legs.forEach((leg, i) => {
      const tr = this.legsBody.rows[i]!;
      const td = (k: string): HTMLElement => tr.querySelector(`.l-${k}`)!;
      setText(td("tag"), leg.tag);
      setText(td("addr"), `${named(leg.interface)}${leg.local} → ${leg.peer}`);
      setText(td("codec"), leg.codec || "–");
      td("addr").title = leg.suite ? `suite ${leg.suite}` : "";
      setText(td("packets"), `${int(leg.packets_in)} / ${int(leg.packets_out)}`);
      setText(td("lost"), int(leg.lost));
      setText(td("dropped"), int(leg.dropped));
      const select = this.selects.get(leg.tag);
      if (select && !this.pending.has(leg.tag) && document.activeElement !== select && select.value !== leg.direction) {
        select.value = leg.direction;
      }
    });
  }

  private renderStreams(d: Detail): void {
    const layout = d.streams.map((s) => ({ index: s.index, type: s.type, tags: s.sides.map((x) => x.tag), fields: fields(s.sides) }));
    const shape = JSON.stringify(layout);
    if (shape !== this.shape) {
      this.shape = shape;
      this.cells.clear();
      this.streamsEl.replaceChildren(
        ...layout.map((s) => {
          const box = el("div", "stream");
          box.dataset["index"] = String(s.index);
          box.appendChild(el("h4", undefined, `Stream ${s.index} · ${s.type}`));
          const table = el("table", "counters");
          const head = table.createTHead().insertRow();
          head.appendChild(el("th", undefined, "counter"));
          for (const tag of s.tags) head.appendChild(el("th", "num", `leg ${tag}`));
          const body = table.createTBody();
          for (const f of s.fields) {
            const tr = body.insertRow();
            tr.dataset["field"] = f;
            tr.appendChild(el("th", undefined, label(f)));
            for (const tag of s.tags) {
              const td = el("td", "num");
              td.dataset["tag"] = tag;
              this.cells.set(`${s.index}\u0000${tag}\u0000${f}`, td);
              tr.appendChild(td);
            }
          }
          box.appendChild(table);
          return box;
        }),
      );
    }
    d.streams.forEach((s, i) => {
      for (const side of s.sides) {
        for (const f of layout[i]!.fields) {
          const td = this.cells.get(`${s.index}\u0000${side.tag}\u0000${f}`);
          if (td) setText(td, value(side, f));
        }
      }
    });
  }
}
