// Small formatting and DOM helpers shared by the views.

const grouped = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });

/** An integer with thousands separators ("1,234,567"); "–" for null/undefined. */
export function int(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? "–" : grouped.format(n);
}

/** A number with at most one decimal. */
export function num(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? "–" : decimal.format(n);
}

/** A rate such as packets/s, shortened: 950, 12.3k, 1.2M. */
export function rate(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  if (n >= 1e6) return `${decimal.format(n / 1e6)}M`;
  if (n >= 1e4) return `${decimal.format(n / 1e3)}k`;
  return grouped.format(n);
}

/** Above the relay's last histogram bound (100 ms): the server's 100 001. */
export const OVER_US = 100_001;

/** A delay in µs: "850 µs", "1.2 ms", "> 100 ms", "–" when null. */
export function micros(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return "–";
  if (us >= OVER_US) return "> 100 ms";
  if (us >= 10_000) return `${decimal.format(us / 1000)} ms`;
  return `${grouped.format(us)} µs`;
}

/** A histogram bucket's upper bound (µs) as a short label: 50µs, 1ms, 2.5s, +Inf. */
export function bound(us: number | undefined): string {
  if (us === undefined || !Number.isFinite(us)) return "+Inf";
  if (us >= 1_000_000) return `${decimal.format(us / 1_000_000)}s`;
  if (us >= 1000) return `${decimal.format(us / 1000)}ms`;
  return `${us}µs`;
}

/** Bytes: 512 B, 10.2 KiB, 3.4 MiB. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  if (n >= 1024 * 1024 * 1024) return `${decimal.format(n / 1024 ** 3)} GiB`;
  if (n >= 1024 * 1024) return `${decimal.format(n / 1024 ** 2)} MiB`;
  if (n >= 1024) return `${decimal.format(n / 1024)} KiB`;
  return `${n} B`;
}

/** An age in seconds: 42s, 3m 05s, 2h 07m, 3d 04h. */
export function age(s: number): string {
  if (!Number.isFinite(s) || s < 0) return "–";
  s = Math.floor(s);
  const pad = (v: number): string => String(v).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86400)}d ${pad(Math.floor(s / 3600) % 24)}h`;
}

/** Drop reasons as "auth: 3, replay: 1" (only non-zero), "" when none. */
export function drops(d: Record<string, number> | null | undefined): string {
  if (!d) return "";
  return Object.entries(d)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${reason}: ${grouped.format(n)}`)
    .join(", ");
}

/** Looks up an element that the page must have. */
export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
}

/** Creates an element with a class and text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Sets text only when it changed (keeps the DOM quiet when nothing moved). */
export function setText(node: Node, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

/** A leg's interface before its address, where the relay has named ones. */
export function named(iface: string): string {
  return iface && iface !== "default" ? `${iface}: ` : "";
}
