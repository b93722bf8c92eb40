// The management page: wires the socket to the header, the call table, the detail and engine views
// and the charts.

import { LiveCharts } from "./charts";
import { Connection, socketUrl } from "./connection";
import { DetailView } from "./detail";
import { EngineView } from "./engine";
import { $, el, micros, rate, setText } from "./format";
import type { Inform, ServerMessage, SortKey, Summary, ViewEdit } from "./protocol";
import { CallTable } from "./table";

const PAGE_SIZE = 50;
const FILTER_DEBOUNCE_MS = 200;
const MESSAGES_KEPT = 6;

const view: ViewEdit = { entry: "view", filter: "", sort: "age", desc: true, offset: 0, limit: PAGE_SIZE };
let readOnly = false;
let matching = 0;
let pendingDrain: number | null = null;
/** Refs of view and detail edits: their "done" answers are not worth a message (errors still are). */
const quietRefs = new Set<number>();

const status = $("status");
const info = $("info");
const readOnlyBadge = $("read-only");
const actions = $("actions");
const drain = $<HTMLInputElement>("drain");
const logLevel = $<HTMLInputElement>("log-level");
const logLevelSet = $<HTMLButtonElement>("log-level-set");
const logLevelCurrent = $("log-level-current");
const filter = $<HTMLInputElement>("filter");
const prev = $<HTMLButtonElement>("prev");
const next = $<HTMLButtonElement>("next");
const page = $("page");
const messages = $("messages");

const conn = new Connection(socketUrl(), {
  open() {
    setStatus(true);
    table.clear();
    sendView();
    if (detail.current !== null && !detail.isEnded) quiet(conn.send({ entry: "detail", id: detail.current }));
  },
  close() {
    setStatus(false);
  },
  message: handle,
});

const table = new CallTable($<HTMLTableElement>("calls"), {
  open: openDetail,
  end: endCall,
  sort(key: SortKey) {
    view.desc = key === view.sort ? !view.desc : key !== "call_id";
    view.sort = key;
    view.offset = 0;
    sendView();
  },
});

const detail = new DetailView({
  close: closeDetail,
  direction: (id, tag, direction) => conn.send({ entry: "leg", id, tag, direction }),
  media(id, tag, media, arg) {
    if (media === "play-dtmf") return conn.send({ entry: "leg", id, tag, media, code: arg ?? "" });
    if (media === "play-media") return conn.send({ entry: "leg", id, tag, media, file: arg ?? "" });
    return conn.send({ entry: "leg", id, tag, media });
  },
  end: endCall,
  record(id, action) {
    if (!readOnly) conn.send({ entry: "call", id, action });
  },
});

const engine = new EngineView();
const charts = new LiveCharts($("chart-packets"), $("chart-calls"), $("chart-delay"));

function setStatus(up: boolean): void {
  setText(status, up ? "connected" : "disconnected");
  status.className = `pill ${up ? "ok" : "bad"}`;
}

function sendView(): void {
  quiet(conn.send({ ...view }));
}

function quiet(ref: number): void {
  quietRefs.add(ref);
  if (quietRefs.size > 100) quietRefs.delete(quietRefs.values().next().value!);
}

function openDetail(id: string): void {
  if (detail.current === id) return;
  detail.open(id);
  table.setSelected(id);
  quiet(conn.send({ entry: "detail", id }));
}

function closeDetail(): void {
  if (detail.current === null) return;
  detail.close();
  table.setSelected(null);
  quiet(conn.send({ entry: "detail", id: null }));
}

function endCall(id: string): void {
  if (readOnly) return;
  if (!window.confirm(`End call '${id}'? Both legs are hung up at the relay.`)) return;
  conn.send({ entry: "call", id, action: "end" });
}

function addMessage(kind: "info" | "error", text: string): void {
  const li = el("li", `msg ${kind}`);
  const time = el("time", undefined, new Date().toLocaleTimeString("en-GB"));
  li.append(time, el("span", undefined, text));
  messages.prepend(li);
  while (messages.childElementCount > MESSAGES_KEPT) messages.lastElementChild!.remove();
}

function setReadOnly(ro: boolean): void {
  readOnly = ro;
  readOnlyBadge.hidden = !ro;
  actions.hidden = ro;
  drain.disabled = ro;
  logLevel.disabled = ro;
  logLevelSet.disabled = ro;
  table.setReadOnly(ro);
  detail.setReadOnly(ro);
}

function onInform(m: Inform): void {
  if (m.version !== undefined) {
    const parts = [`v${m.version}`, `engine ${m.engine ?? "?"}`, `io ${m.io ?? "?"}`];
    if (m.workers !== undefined) parts.push(`${m.workers} workers`);
    if (m.user) parts.push(`user ${m.user}`);
    setText(info, parts.join(" · "));
    setReadOnly(m.read_only === true);
    if (m.draining !== undefined) drain.checked = m.draining;
    if (m.log_level !== undefined) setLogLevel(m.log_level);
  }
  if (m.ref !== undefined) {
    detail.answered(m.ref);
    if (m.ref === pendingDrain) pendingDrain = null;
  }
  if (m.message && !(m.ref !== undefined && quietRefs.delete(m.ref))) addMessage("info", m.message);
}

function setLogLevel(level: string): void {
  setText(logLevelCurrent, level);
  logLevel.placeholder = level;
}

function onSummary(s: Summary): void {
  matching = s.matching;
  setText($("summary-calls"), String(s.calls));
  setText($("summary-matching"), String(s.matching));
  setText($("summary-pps"), rate(s.packets_per_s));
  setText($("summary-p50"), micros(s.delay_p50_us));
  setText($("summary-p99"), micros(s.delay_p99_us));
  const stale = $("summary-stale");
  setText(stale, rate(s.stale_per_s ?? 0));
  stale.title = `${s.stale ?? 0} since the relay started`;
  stale.classList.toggle("warn", (s.stale_per_s ?? 0) > 0);
  const draining = $("summary-draining");
  const refused = s.load_limited ? ` · ${s.load_limited} refused at load limits` : "";
  setText(draining, (s.draining ? "draining" : "accepting") + refused);
  draining.className = `pill ${s.draining ? "warn" : "ok"}`;
  if (pendingDrain === null && drain.checked !== s.draining) drain.checked = s.draining;
  if (s.log_level !== undefined) setLogLevel(s.log_level);

  table.setSort(s.sort, s.desc);
  const from = s.matching === 0 ? 0 : Math.min(s.offset + 1, s.matching);
  const to = Math.min(s.offset + s.limit, s.matching);
  setText(page, `${from}–${to} of ${s.matching}`);
  prev.disabled = view.offset === 0;
  next.disabled = view.offset + view.limit >= s.matching;
  // Calls ended under a later page: step back to the last page that has rows.
  if (s.offset === view.offset && view.offset > 0 && view.offset >= s.matching) {
    view.offset = Math.max(0, Math.ceil(s.matching / view.limit) - 1) * view.limit;
    sendView();
  }
  charts.push(s);
}

function handle(m: ServerMessage): void {
  switch (m.type) {
    case "inform":
      onInform(m);
      break;
    case "error":
      if (m.ref !== undefined) {
        detail.answered(m.ref);
        if (m.ref === pendingDrain) {
          pendingDrain = null;
          drain.checked = !drain.checked;
        }
      }
      addMessage("error", m.message);
      break;
    case "create":
    case "update":
      switch (m.entry) {
        case "summary":
          onSummary(m.data);
          break;
        case "engine":
          engine.update(m.data);
          break;
        case "call":
          table.upsert(m.id, m.data);
          break;
        case "detail":
          detail.update(m.id, m.data);
          break;
      }
      break;
    case "remove":
      if (m.entry === "call" && m.id !== undefined) table.remove(m.id);
      else if (m.entry === "detail" && m.id !== undefined) detail.markEnded(m.id);
      break;
  }
}

// Controls.
let filterTimer: number | undefined;
filter.addEventListener("input", () => {
  window.clearTimeout(filterTimer);
  filterTimer = window.setTimeout(() => {
    const text = filter.value.trim();
    if (text === view.filter) return;
    view.filter = text;
    view.offset = 0;
    sendView();
  }, FILTER_DEBOUNCE_MS);
});

prev.addEventListener("click", () => {
  if (view.offset === 0) return;
  view.offset = Math.max(0, view.offset - view.limit);
  prev.disabled = view.offset === 0;
  sendView();
});

next.addEventListener("click", () => {
  if (view.offset + view.limit >= matching) return;
  view.offset += view.limit;
  next.disabled = view.offset + view.limit >= matching;
  sendView();
});

drain.addEventListener("change", () => {
  if (readOnly) return;
  pendingDrain = conn.send({ entry: "relay", drain: drain.checked });
});

function submitLogLevel(): void {
  const level = logLevel.value.trim();
  if (readOnly || level === "") return;
  conn.send({ entry: "relay", log_level: level });
  logLevel.value = "";
}
logLevelSet.addEventListener("click", submitLogLevel);
logLevel.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") submitLogLevel();
});

$("logout").addEventListener("click", async () => {
  try {
    await (await fetch("logout", { method: "POST", credentials: "same-origin" })).text();
  } finally {
    window.location.href = "login";
  }
});

setStatus(false);
conn.connect();
