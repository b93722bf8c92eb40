// The WebSocket to /ui/ws: reconnects with backoff, numbers the edits, keeps under the server's rate.

import { parseMessage, type EditBody, type ServerMessage } from "./protocol";

export interface ConnectionHandlers {
  open(): void;
  close(): void;
  message(msg: ServerMessage): void;
}

/** The server closes a connection sending more than 20 messages a second: stay well under. */
const MAX_PER_SECOND = 10;
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 5000;

export class Connection {
  private ws: WebSocket | null = null;
  private nextRef = 1;
  private backoff = BACKOFF_MIN_MS;
  private opened = false;
  private sentAt: number[] = [];
  private queue: { ref: number; body: EditBody }[] = [];
  private flushTimer: number | undefined;

  constructor(
    private readonly url: string,
    private readonly on: ConnectionHandlers,
  ) {}

  get connected(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  connect(): void {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    this.opened = false;
    ws.onopen = () => {
      this.opened = true;
      this.backoff = BACKOFF_MIN_MS;
      this.on.open();
      this.flush();
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (typeof ev.data !== "string") return;
      const msg = parseMessage(ev.data);
      if (msg) this.on.message(msg);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.queue = [];
      this.on.close();
      if (!this.opened) void this.checkLoggedOut();
      const delay = this.backoff;
      this.backoff = Math.min(BACKOFF_MAX_MS, this.backoff * 2);
      window.setTimeout(() => this.connect(), delay);
    };
  }

  /**
   * Queues an edit and returns its ref. A newer edit of the same kind (view, detail) replaces a queued
   * one, so that typing or paging fast never sends more than the server allows. The view and the
   * watched call are sent again by the page on every (re)connect.
   */
  send(body: EditBody): number {
    const ref = this.nextRef++;
    if (!this.connected && body.entry !== "view" && body.entry !== "detail") {
      // An action is never held back to be sent after a reconnect: it is refused here, as the server would.
      queueMicrotask(() => this.on.message({ type: "error", ref, message: "not connected: nothing was sent" }));
      return ref;
    }
    if (body.entry === "view" || body.entry === "detail") {
      this.queue = this.queue.filter((q) => q.body.entry !== body.entry);
    }
    this.queue.push({ ref, body });
    this.flush();
    return ref;
  }

  private flush(): void {
    if (this.flushTimer !== undefined || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const now = performance.now();
    this.sentAt = this.sentAt.filter((t) => now - t < 1000);
    while (this.queue.length > 0 && this.sentAt.length < MAX_PER_SECOND) {
      const { ref, body } = this.queue.shift()!;
      this.ws.send(JSON.stringify({ type: "edit", ref, ...body }));
      this.sentAt.push(now);
    }
    if (this.queue.length > 0) {
      const wait = 1000 - (now - this.sentAt[0]!) + 5;
      this.flushTimer = window.setTimeout(() => {
        this.flushTimer = undefined;
        this.flush();
      }, wait);
    }
  }

  /** A socket refused before opening may mean the session ended (401): then go to the login form. */
  private async checkLoggedOut(): Promise<void> {
    try {
      const res = await fetch(window.location.href, { cache: "no-store", credentials: "same-origin" });
      if (res.status === 401) window.location.href = "login";
    } catch {
      // The relay is down: keep trying to reconnect.
    }
  }
}

/** ws: or wss: to /ui/ws on the page's own host. */
export function socketUrl(): string {
  const proto = window.location.protocol === "https:" ? "wss:" : "ws:";
  return `${proto}//${window.location.host}/ui/ws`;
}
