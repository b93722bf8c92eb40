// The detail panel of one call: its legs (with direction and media controls), every counter per stream
// and leg, and the delay histogram. Updated in place every interval; rebuilt only when its shape changes.

import { clock, drawHistogram, drawSparkline } from "./charts";
import { $, age, drops, el, int, micros, named, num, setText } from "./format";
import {
  DIRECTIONS,
  DTMF_CODES,
  MAX_FILE,
  type CallRow,
  type Detail,
  type Direction,
  type LegMedia,
  type MediaAction,
  type QualitySample,
  type RecordAction,
  type Recording,
  type SsrcQuality,
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
  "jitter_us",
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
  jitter_us: "jitter (relay)",
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
  if (field === "jitter_us" && typeof v === "number") return `${num(v / 1000)} ms`;
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

/** The figures of one SSRC's call quality, in this order: key, label, tooltip. */
const QUALITY_FACTS = [
  ["mos", "MOS", "average over the samples with a MOS"],
  ["jitter", "jitter", "interarrival jitter the endpoint received with"],
  ["loss", "packet loss", "lost on the way to the endpoint"],
  ["rtt", "round trip", "end to end, both legs (from the endpoints' sender reports)"],
  ["lowest", "lowest MOS", "the sample with the lowest MOS, and when it was reported"],
  ["cumulative", "lost in all", "cumulative packets lost, from the last report"],
] as const;

type QualityFact = (typeof QUALITY_FACTS)[number][0];

/** One SSRC's box in the call quality section. */
interface QualityCard {
  box: HTMLElement;
  who: HTMLElement;
  source: HTMLElement;
  count: HTMLElement;
  values: Map<QualityFact, HTMLElement>;
  chart: HTMLElement;
}

/** MOS with one decimal ("4.3"), "–" when none. */
function mosText(mos: number | null | undefined): string {
  return mos === null || mos === undefined ? "–" : mos.toFixed(1);
}

/** A MOS's pill class: good from 4.0, fair from 3.6, poor below. */
function mosClass(mos: number | null | undefined): string {
  if (mos === null || mos === undefined) return "";
  return mos >= 4 ? "ok" : mos >= 3.6 ? "warn" : "bad";
}

/** A round trip in µs as ms ("52.3 ms"), "–" when not known. */
function rttText(us: number | null | undefined): string {
  return us === null || us === undefined ? "–" : `${num(us / 1000)} ms`;
}

/** The SSRC as NG's `query` names it (decimal), and in hex. */
function ssrcText(ssrc: number): string {
  return `SSRC ${ssrc} (0x${ssrc.toString(16).padStart(8, "0")})`;
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
  private readonly qualityEl = $("detail-quality");
  private readonly qualityModel = $("detail-quality-model");
  private qualityShape = "";
  private qualityCards = new Map<number, QualityCard>();
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
    this.qualityShape = "";
    this.qualityCards.clear();
    this.qualityEl.replaceChildren();
    setText(this.qualityModel, "");
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
    this.renderQuality(d);
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

  /** Call quality per SSRC: who sends it (what that leg's endpoint received), the figures, and the MOS
   * over the call. Boxes are rebuilt when the SSRCs change, else updated in place. */
  private renderQuality(d: Detail): void {
    const list = d.quality ?? [];
    const model = d.mos_model ?? null;
    setText(this.qualityModel, model === null ? "call quality is off" : `MOS model ${model}`);
    const shape = JSON.stringify([model, list.map((q) => q.ssrc)]);
    if (shape !== this.qualityShape) {
      this.qualityShape = shape;
      this.qualityCards.clear();
      if (list.length === 0) {
        const text =
          model === null
            ? "Call quality is off (--call-quality off)."
            : "No samples yet: each endpoint's RTCP reports make them (at most one a second), or the relay's own view of what it relays to an endpoint that sends none (every 5 s).";
        this.qualityEl.replaceChildren(el("p", "hint q-empty", text));
      } else {
        this.qualityEl.replaceChildren(
          ...list.map((q) => {
            const card = this.qualityCard(q.ssrc);
            this.qualityCards.set(q.ssrc, card);
            return card.box;
          }),
        );
      }
    }
    for (const q of list) {
      const card = this.qualityCards.get(q.ssrc);
      if (card) this.showQuality(card, q);
    }
  }

  private qualityCard(ssrc: number): QualityCard {
    const box = el("div", "q-ssrc");
    box.dataset["ssrc"] = String(ssrc);
    const head = el("div", "q-head");
    const who = el("span", "q-who");
    const source = el("span", "pill q-source");
    const count = el("span", "muted q-count");
    head.append(el("span", "q-id", ssrcText(ssrc)), who, source, count);
    const body = el("div", "q-body");
    const facts = el("div", "q-facts");
    const values = new Map<QualityFact, HTMLElement>();
    for (const [key, label, title] of QUALITY_FACTS) {
      const f = el("div", "fact");
      f.title = title;
      const v = el("span", "v q-v");
      v.dataset["k"] = key;
      values.set(key, v);
      f.append(el("span", "k", label), v);
      facts.appendChild(f);
    }
    const chart = el("div", "q-chart");
    body.append(facts, chart);
    box.append(head, body);
    return { box, who, source, count, values, chart };
  }

  private showQuality(card: QualityCard, q: SsrcQuality): void {
    const stream = q.stream === null ? "" : `, stream ${q.stream}`;
    setText(
      card.who,
      q.tag ? `what leg ${q.tag}'s endpoint received (it sends this SSRC${stream})` : "what the endpoint sending it received (no leg's RTP has it)",
    );
    card.box.dataset["tag"] = q.tag;
    setText(card.source, q.source);
    card.source.className = `pill q-source ${q.source === "RTCP" ? "ok" : ""}`;
    card.source.title =
      q.source === "RTCP" ? "from the endpoint's RTCP report blocks" : "the relay's own view: the endpoint sends no reports";
    setText(card.count, `${int(q.samples)} samples, ${int(q.mos_samples)} with a MOS`);
    // The averages are over the samples with a MOS; without any, the last sample's figures.
    const figures: QualitySample | null = q.mos_samples > 0 ? q.average : q.last;
    const from = q.mos_samples > 0 ? `average of ${int(q.mos_samples)} samples` : "last sample (none has a MOS yet)";
    const set = (k: QualityFact, text: string, title: string, cls = ""): void => {
      const v = card.values.get(k)!;
      setText(v, text);
      v.title = title;
      v.className = `v q-v ${cls}`;
    };
    const high = q.highest?.mos != null ? `; highest ${mosText(q.highest.mos)} at ${clock(q.highest.at ?? 0)}` : "";
    set("mos", mosText(q.mos_samples > 0 ? q.average.mos : null), `${from}${high}`, mosClass(q.average.mos));
    set("jitter", figures ? `${int(figures.jitter_ms)} ms` : "–", from);
    set("loss", figures ? `${int(figures.loss_pct)} %` : "–", from);
    set(
      "rtt",
      rttText(figures?.rtt_us),
      figures?.rtt_leg_us != null
        ? `${from}; the relay's leg towards this endpoint: ${rttText(figures.rtt_leg_us)}`
        : `${from}; not known without both endpoints' sender reports`,
    );
    const low = q.lowest;
    set(
      "lowest",
      low?.mos != null ? `${mosText(low.mos)} at ${clock(low.at ?? 0)}` : "–",
      low?.at != null
        ? `reported ${new Date(low.at * 1000).toISOString()}: jitter ${low.jitter_ms} ms, loss ${low.loss_pct} %, round trip ${rttText(low.rtt_us)}`
        : "",
      mosClass(low?.mos),
    );
    set("cumulative", `${int(q.cumulative_loss)} packets`, "cumulative packets lost, from the last report");
    drawSparkline(card.chart, q.progression);
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
