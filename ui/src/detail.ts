// The detail panel of one call: its legs (with direction and media controls), every counter per stream
// and leg, and the delay histogram. Updated in place every interval; rebuilt only when its shape changes.

import { drawHistogram } from "./charts";
import { $, age, drops, el, int, micros, named, setText } from "./format";
import {
  DIRECTIONS,
  DTMF_CODES,
  MAX_FILE,
  type CallRow,
  type Detail,
  type Direction,
  type LegMedia,
  type MediaAction,
  type RecordAction,
  type Recording,
  type StreamSide,
} from "./protocol";

export interface DetailHandlers {
  close(): void;
  direction(id: string, tag: string, direction: Direction): number;
  /** A media action on a leg (`arg`: the digit of play-dtmf, the file of play-media); its ref. */
  media(id: string, tag: string, action: MediaAction, arg?: string): number;
  end(id: string): void;
  record(id: string, action: RecordAction): void;
}

/** The media controls that are set and undone from a leg's row: its state, the actions, labels. */
const TOGGLES = [
  {
    on: "blocked",
    set: "block-media",
    undo: "unblock-media",
    label: ["Block media", "Unblock media"],
    pill: ["blocked", "bad"],
    title: "What this leg sends is not relayed (its DTMF is): NG block media",
  },
  {
    on: "silenced",
    set: "silence-media",
    undo: "unsilence-media",
    label: ["Silence", "Unsilence"],
    pill: ["silenced", "warn"],
    title: "What this leg sends is relayed as silence: NG silence media",
  },
  {
    on: "dtmf_blocked",
    set: "block-dtmf",
    undo: "unblock-dtmf",
    label: ["Block DTMF", "Unblock DTMF"],
    pill: ["DTMF blocked", "warn"],
    title: "The DTMF events this leg sends are dropped: NG block DTMF",
  },
] as const;

/** One leg's media controls in the legs table: a row under the leg's. */
interface MediaControls {
  tr: HTMLTableRowElement;
  state: HTMLElement;
  actions: HTMLElement;
  toggles: HTMLButtonElement[];
  code: HTMLSelectElement;
  dtmf: HTMLButtonElement;
  file: HTMLInputElement;
  play: HTMLButtonElement;
  stop: HTMLButtonElement;
  /** The leg's controls as last sampled. */
  last: LegMedia | null;
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
  private legRows = new Map<string, HTMLTableRowElement>();
  private media = new Map<string, MediaControls>();
  /** Media actions not yet answered, by leg tag: that leg's media buttons wait meanwhile. */
  private mediaPending = new Map<string, number>();

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
    this.legRows.clear();
    this.media.clear();
    this.mediaPending.clear();
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
    for (const tag of this.media.keys()) this.showMedia(tag);
  }

  /** The answer (inform or error) to an edit: a direction edit no longer holds its select, a media
   * action no longer holds its leg's buttons. */
  answered(ref: number): void {
    for (const [tag, r] of this.pending) if (r === ref) this.pending.delete(tag);
    for (const [tag, r] of this.mediaPending) {
      if (r !== ref) continue;
      this.mediaPending.delete(tag);
      this.showMedia(tag);
    }
  }

  markEnded(id: string): void {
    if (id !== this.id) return;
    this.ended = true;
    this.setState("ended", "bad");
    this.endButton.hidden = true;
    this.showRecordButtons();
    for (const s of this.selects.values()) s.disabled = true;
    for (const tag of this.media.keys()) this.showMedia(tag);
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
    this.renderLegs(d.call, d.media ?? []);
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

  private renderLegs(c: CallRow, media: LegMedia[]): void {
    const shape = c.legs.map((l) => l.tag).join("\u0000");
    if (shape !== this.legsShape) {
      this.legsShape = shape;
      this.selects.clear();
      this.legRows.clear();
      this.media.clear();
      this.legsBody.replaceChildren(
        ...c.legs.flatMap((leg) => {
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
          this.legRows.set(leg.tag, tr);
          const controls = this.mediaControls(leg.tag, tr.childElementCount);
          this.media.set(leg.tag, controls);
          return [tr, controls.tr];
        }),
      );
    }
    for (const leg of c.legs) {
      const tr = this.legRows.get(leg.tag);
      if (!tr) continue;
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
      const controls = this.media.get(leg.tag);
      if (controls) {
        controls.last = media.find((m) => m.tag === leg.tag) ?? null;
        this.showMedia(leg.tag);
      }
    }
  }

  /** The row of a leg's media controls: what is set, and the actions (as NG's media-control commands
   * with this leg as `from-tag`). */
  private mediaControls(tag: string, columns: number): MediaControls {
    const tr = el("tr", "media");
    tr.dataset["tag"] = tag;
    const td = el("td", "l-media");
    td.colSpan = columns;
    const state = el("span", "m-state");
    const actions = el("span", "m-actions");
    const send = (action: MediaAction, arg?: string): void => {
      if (this.id === null || this.readOnly || this.ended || this.mediaPending.has(tag)) return;
      this.mediaPending.set(tag, this.on.media(this.id, tag, action, arg));
      this.showMedia(tag);
    };
    const button = (text: string, title: string): HTMLButtonElement => {
      const b = el("button", "small", text);
      b.type = "button";
      b.title = title;
      return b;
    };
    const toggles = TOGGLES.map((t) => {
      const b = button(t.label[0], t.title);
      b.dataset["media"] = t.set;
      b.addEventListener("click", () => send(b.dataset["media"] as MediaAction));
      return b;
    });
    const code = el("select", "dtmf-code");
    code.setAttribute("aria-label", `DTMF digit from leg ${tag}`);
    for (const d of DTMF_CODES) code.appendChild(el("option", undefined, d)).setAttribute("value", d);
    const dtmf = button("Send DTMF", "Play the digit as if this leg sent it: the other leg hears it (NG play DTMF)");
    dtmf.dataset["media"] = "play-dtmf";
    dtmf.addEventListener("click", () => send("play-dtmf", code.value));
    const file = el("input", "media-file");
    file.type = "text";
    file.placeholder = "file in the media dir";
    file.maxLength = MAX_FILE;
    file.spellcheck = false;
    file.autocomplete = "off";
    file.setAttribute("aria-label", `file to play to leg ${tag}`);
    const play = button("Play", "Play the file of the relay's --media-dir to this leg (NG play media)");
    play.dataset["media"] = "play-media";
    const playFile = (): void => {
      const name = file.value.trim();
      if (name !== "" && new TextEncoder().encode(name).length <= MAX_FILE) send("play-media", name);
    };
    play.addEventListener("click", playFile);
    file.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") playFile();
    });
    file.addEventListener("input", () => this.showMedia(tag));
    const stop = button("Stop", "Stop what is played to this leg (NG stop media)");
    stop.dataset["media"] = "stop-media";
    stop.addEventListener("click", () => send("stop-media"));
    const group = (...children: HTMLElement[]): HTMLElement => {
      const g = el("span", "m-group");
      g.append(...children);
      return g;
    };
    actions.append(group(...toggles), group(code, dtmf), group(file, play, stop));
    td.append(el("span", "k", "media"), state, actions);
    tr.appendChild(td);
    return { tr, state, actions, toggles, code, dtmf, file, play, stop, last: null };
  }

  /** Shows a leg's media controls as last sampled: a pill for each one set, each toggle as the action
   * that changes it; the actions wait while one of this leg's is unanswered. */
  private showMedia(tag: string): void {
    const m = this.media.get(tag);
    if (!m) return;
    const last = m.last;
    const wide = new Set<string>(last?.call_wide ?? []);
    const pills: [string, string, string, string][] = [];
    for (const t of TOGGLES) {
      if (!last?.[t.on]) continue;
      let text: string = t.pill[0];
      if (t.on === "dtmf_blocked" && last.dtmf_as) text = `DTMF as ${last.dtmf_as}`;
      const title = wide.has(t.on) ? "set for the whole call (NG without from-tag): undo it there" : "";
      pills.push([t.on, wide.has(t.on) ? `${text} (call)` : text, t.pill[1], title]);
    }
    if (last?.playing) {
      pills.push(["playing", "playing", "ok", `${int(last.played_packets ?? 0)} packets, ${int(last.played_digits ?? 0)} digits`]);
    }
    const key = JSON.stringify(pills);
    if (m.state.dataset["key"] !== key) {
      m.state.dataset["key"] = key;
      m.state.replaceChildren(
        ...(pills.length === 0
          ? [el("span", "muted", "as sent")]
          : pills.map(([state, text, cls, title]) => {
              const p = el("span", `pill ${cls}`, text);
              p.dataset["state"] = state;
              p.title = title;
              return p;
            })),
      );
    }
    m.actions.hidden = this.readOnly;
    const off = this.readOnly || this.ended || this.mediaPending.has(tag);
    TOGGLES.forEach((t, i) => {
      const b = m.toggles[i]!;
      const on = last?.[t.on] === true;
      b.dataset["media"] = on ? t.undo : t.set;
      setText(b, t.label[on ? 1 : 0]);
      b.disabled = off;
    });
    m.code.disabled = off;
    m.dtmf.disabled = off;
    m.file.disabled = this.readOnly || this.ended;
    m.play.disabled = off || m.file.value.trim() === "";
    m.stop.disabled = off || !last?.playing;
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
