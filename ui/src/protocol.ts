// The management WebSocket protocol (docs/MANAGEMENT.md): one JSON object per text frame.

export type SortKey = "age" | "call_id" | "packets" | "lost" | "dropped" | "delay_p99_us";
export const SORT_KEYS: readonly SortKey[] = ["age", "call_id", "packets", "lost", "dropped", "delay_p99_us"];

export type Direction = "sendrecv" | "sendonly" | "recvonly" | "inactive";
export const DIRECTIONS: readonly Direction[] = ["sendrecv", "sendonly", "recvonly", "inactive"];

/** A media action on a leg, as rtpengine's media-control NG commands with the leg's tag as `from-tag`. */
export type MediaAction =
  | "block-media"
  | "unblock-media"
  | "silence-media"
  | "unsilence-media"
  | "block-dtmf"
  | "unblock-dtmf"
  | "play-dtmf"
  | "play-media"
  | "stop-media";

/** The digits play-dtmf takes. */
export const DTMF_CODES: readonly string[] = [..."0123456789*#ABCD"];
/** Longest file name play-media takes, bytes (UTF-8). */
export const MAX_FILE = 255;

/** Drop counts by reason (only non-zero reasons in a call row). */
export type Drops = Record<string, number>;

export interface Histogram {
  bounds_us: number[];
  counts: number[];
  sum_us?: number;
}

export interface Inform {
  type: "inform";
  ref?: number;
  message?: string;
  version?: string;
  engine?: string;
  io?: string;
  workers?: number;
  transcode_workers?: number;
  read_only?: boolean;
  user?: string | null;
  interval_ms?: number;
  limits?: { port_pairs?: number; max_clients?: number };
  log_level?: string;
  draining?: boolean;
}

export interface ErrorMsg {
  type: "error";
  ref?: number;
  message: string;
}

export interface Summary {
  time_ms: number;
  calls: number;
  matching: number;
  offset: number;
  limit: number;
  sort: SortKey;
  desc: boolean;
  filter: string;
  packets_per_s: number;
  packets_in: number;
  packets_out: number;
  dropped: number;
  /** RTP packets dropped as older than the delay bound (`--stale-after`) since the relay started, and per second over the last interval. */
  stale?: number;
  stale_per_s?: number;
  delay_p50_us: number | null;
  delay_p99_us: number | null;
  draining: boolean;
  /** New calls refused at the relay's load limits (and while draining) since it started. */
  load_limited?: number;
  log_level: string;
}

export interface CallLeg {
  tag: string;
  /** The relay's interface of this leg (its name; "default" when unnamed). */
  interface: string;
  local: string;
  peer: string;
  suite: string;
  codec: string;
  direction: Direction;
  packets_in: number;
  packets_out: number;
  lost: number;
  dropped: number;
}

export interface CallRow {
  call_id: string;
  from_tag: string;
  to_tag: string | null;
  age_s: number;
  worker: number;
  answered: boolean;
  legs: CallLeg[];
  packets_in: number;
  packets_out: number;
  lost: number;
  dropped: number;
  drops: Drops;
  delay_p50_us: number | null;
  delay_p99_us: number | null;
  codecs: string;
  transcoded: boolean;
}

/** One leg of one stream, with every counter the relay keeps (extra fields are shown as they come). */
export interface StreamSide {
  tag: string;
  interface: string;
  local: string;
  peer: string;
  protocol: string;
  suite: string;
  rtcp_mux: boolean;
  direction: Direction;
  packets_in: number;
  bytes_in: number;
  packets_out: number;
  bytes_out: number;
  drops: Drops;
  delay_avg_us: number | null;
  delay_max_us: number | null;
  last_packet_ms: number | null;
  /** The relay's interarrival jitter of the RTP this leg's endpoint sends, µs (null: call quality off). */
  jitter_us?: number | null;
  [counter: string]: unknown;
}

export interface Stream {
  index: number;
  type: string;
  sides: StreamSide[];
}

/** A call's recording: writing or paused, and its pcap. */
export interface Recording {
  state: "recording" | "paused";
  file: string;
}

/** A leg's media controls: on what it sends (set for it, or for the whole call: `call_wide` names those),
 * and what is played to it. */
export interface LegMedia {
  tag: string;
  blocked: boolean;
  silenced: boolean;
  dtmf_blocked: boolean;
  /** Its DTMF is relayed as this digit instead (set over NG: DTMF-security zero or DTMF). */
  dtmf_as?: string | null;
  call_wide?: ("blocked" | "silenced" | "dtmf_blocked")[];
  playing: boolean;
  played_packets?: number;
  played_digits?: number;
}

/** One call quality sample (or the averages over those with a MOS: `at` null). */
export interface QualitySample {
  /** MOS in tenths, 1.0–5.0 (null: none, as under the CQ model without a round trip). */
  mos: number | null;
  /** End-to-end round trip (both legs), µs; null when not known. */
  rtt_us: number | null;
  /** Round trip of the relay's leg towards the endpoint, µs; null when not known. */
  rtt_leg_us: number | null;
  jitter_ms: number;
  loss_pct: number;
  /** When it was reported, UNIX s. */
  at: number | null;
}

/** What the endpoint sending one SSRC received (from its RTCP reports, or the relay's own view). */
export interface SsrcQuality {
  ssrc: number;
  /** The leg whose endpoint sends the SSRC ("" when no leg's RTP has it). */
  tag: string;
  /** The stream it is sent on (a `Stream.index`). */
  stream: number | null;
  source: "RTCP" | "relay";
  cumulative_loss: number;
  /** Samples kept over the call, and those with a MOS (the averages are over these). */
  samples: number;
  mos_samples: number;
  average: QualitySample;
  lowest: QualitySample | null;
  highest: QualitySample | null;
  /** The last sample (its jitter and loss are all there is while no sample has a MOS). */
  last: QualitySample | null;
  /** Every kept sample: [reported at (UNIX s), MOS or null]. */
  progression: [number, number | null][];
}

/** The recording actions of a call, as NG's start/pause/stop recording. */
export type RecordAction = "start-recording" | "pause-recording" | "stop-recording";

export interface Detail {
  call: CallRow;
  /** Absent or null: not recording. */
  recording?: Recording | null;
  /** The relay has a recording directory. */
  recordable?: boolean;
  /** Each leg's media controls (by tag). */
  media?: LegMedia[];
  streams: Stream[];
  /** The relay's MOS model ("CQ" or "LQ"); null: call quality is off. */
  mos_model?: string | null;
  /** Call quality per SSRC with samples. */
  quality?: SsrcQuality[];
  histogram: Histogram;
}

export interface EngineShare {
  path: string;
  batches: number;
  packets: number;
}

export interface EngineWorker {
  id: number;
  legs: number;
  transcoding: boolean;
  batches: number;
  batch_packets: number;
  alive: boolean;
}

export interface Engine {
  name: string;
  shares: EngineShare[];
  batches: number;
  batch_packets: number;
  threshold: number | null;
  round_trip: Histogram;
  workers: EngineWorker[];
}

export type Entry =
  | { entry: "summary"; data: Summary }
  | { entry: "engine"; data: Engine }
  | { entry: "call"; id: string; data: CallRow }
  | { entry: "detail"; id: string; data: Detail };

export type Create = { type: "create" } & Entry;
export type Update = { type: "update" } & Entry;
export interface Remove {
  type: "remove";
  entry: "call" | "detail" | "summary" | "engine";
  id?: string;
}

export type ServerMessage = Inform | ErrorMsg | Create | Update | Remove;

/** An edit without its `type` and `ref` (added when sent). */
export type EditBody =
  | { entry: "view"; filter: string; sort: SortKey; desc: boolean; offset: number; limit: number }
  | { entry: "detail"; id: string | null }
  | { entry: "call"; id: string; action: "end" | RecordAction }
  | { entry: "leg"; id: string; tag: string; direction: Direction }
  | { entry: "leg"; id: string; tag: string; media: Exclude<MediaAction, "play-dtmf" | "play-media"> }
  | { entry: "leg"; id: string; tag: string; media: "play-dtmf"; code: string }
  | { entry: "leg"; id: string; tag: string; media: "play-media"; file: string }
  | { entry: "relay"; log_level: string }
  | { entry: "relay"; drain: boolean };

export type Edit = { type: "edit"; ref: number } & EditBody;

export type ViewEdit = Extract<EditBody, { entry: "view" }>;

/** Parses one frame; null when it is not an object with a known type. */
export function parseMessage(text: string): ServerMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const type = (value as { type?: unknown }).type;
  if (type === "inform" || type === "error" || type === "create" || type === "update" || type === "remove") {
    return value as ServerMessage;
  }
  return null;
}
