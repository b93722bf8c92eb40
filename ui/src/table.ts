// The live call table: one <tr data-id> per row of the page, updated in place, ordered by the view.

import { age, drops, el, int, named, OVER_US, setText } from "./format";

/** A delay cell (µs): "> 100 ms" above the relay's last bucket. */
function delay(us: number | null | undefined): string {
  return us !== null && us !== undefined && us >= OVER_US ? "> 100 ms" : int(us);
}
import type { CallRow, SortKey } from "./protocol";

type CellKey = "id" | "tags" | "legs" | "suites" | "codecs" | "packets" | "lost" | "dropped" | "delay" | "age";
const CELLS: readonly CellKey[] = ["id", "tags", "legs", "suites", "codecs", "packets", "lost", "dropped", "delay", "age"];

interface Row {
  tr: HTMLTableRowElement;
  cells: Record<CellKey, HTMLTableCellElement>;
  end: HTMLButtonElement;
  data: CallRow;
}

export interface TableHandlers {
  open(id: string): void;
  end(id: string): void;
  sort(key: SortKey): void;
}

/** What each cell shows for a row (text; the dropped cell also has a title). */
function cellText(c: CallRow): Record<CellKey, string> {
  const uniq = (xs: string[]): string => [...new Set(xs.filter((x) => x))].join("\n");
  return {
    id: c.call_id,
    tags: `${c.from_tag}\n${c.to_tag ?? "–"}`,
    legs: c.legs
      .map(
        (l) =>
          `${named(l.interface)}${l.local} → ${l.peer}${l.direction && l.direction !== "sendrecv" ? ` (${l.direction})` : ""}`,
      )
      .join("\n"),
    suites: uniq(c.legs.map((l) => l.suite)),
    codecs: (c.codecs || uniq(c.legs.map((l) => l.codec))) + (c.transcoded ? " ⇄" : ""),
    packets: `${int(c.packets_in)} / ${int(c.packets_out)}`,
    lost: int(c.lost),
    dropped: int(c.dropped),
    delay: `${delay(c.delay_p50_us)} / ${delay(c.delay_p99_us)}`,
    age: age(c.age_s),
  };
}

/** The comparator of the view's sort (ties: Call-ID ascending, whatever the direction). */
function compare(key: SortKey, desc: boolean): (a: CallRow, b: CallRow) => number {
  const value = (c: CallRow): number | string => {
    switch (key) {
      case "age":
        return c.age_s;
      case "call_id":
        return c.call_id;
      case "packets":
        return c.packets_in + c.packets_out;
      case "lost":
        return c.lost;
      case "dropped":
        return c.dropped;
      case "delay_p99_us":
        return c.delay_p99_us ?? -1;
    }
  };
  const sign = desc ? -1 : 1;
  return (a, b) => {
    const va = value(a);
    const vb = value(b);
    if (va < vb) return -sign;
    if (va > vb) return sign;
    return a.call_id < b.call_id ? -1 : a.call_id > b.call_id ? 1 : 0;
  };
}

export class CallTable {
  private readonly rows = new Map<string, Row>();
  private readonly tbody: HTMLTableSectionElement;
  private readonly empty: HTMLElement;
  private sortKey: SortKey = "age";
  private desc = true;
  private readOnly = false;
  private selected: string | null = null;
  private reorderPending = false;

  constructor(
    private readonly table: HTMLTableElement,
    private readonly on: TableHandlers,
  ) {
    this.tbody = table.tBodies[0] ?? table.createTBody();
    this.empty = document.getElementById("calls-empty") ?? el("div");
    for (const th of table.querySelectorAll<HTMLTableCellElement>("th[data-sort]")) {
      th.addEventListener("click", () => this.on.sort(th.dataset["sort"] as SortKey));
    }
    // One listener for all rows: a click on a row opens its detail, on its End button ends it.
    this.tbody.addEventListener("click", (ev) => {
      const target = ev.target as HTMLElement;
      const tr = target.closest("tr");
      const id = tr?.dataset["id"];
      if (id === undefined) return;
      if (target.closest("button.end")) this.on.end(id);
      else this.on.open(id);
    });
    this.tbody.addEventListener("keydown", (ev) => {
      const target = ev.target as HTMLElement;
      const id = target.dataset["id"];
      if (ev.key === "Enter" && target.tagName === "TR" && id !== undefined) this.on.open(id);
    });
    this.updateEmpty();
  }

  get size(): number {
    return this.rows.size;
  }

  /** Creates or updates a row (create and update are the same to the table). */
  upsert(id: string, data: CallRow): void {
    let row = this.rows.get(id);
    if (!row) {
      // A new row goes in its place at once; a changed one is moved with the next re-order.
      row = this.createRow(id, data);
      const cmp = compare(this.sortKey, this.desc);
      const before = [...this.tbody.rows].find((tr) => {
        const other = this.rows.get(tr.dataset["id"] ?? "");
        return other !== undefined && cmp(other.data, data) > 0;
      });
      this.rows.set(id, row);
      this.tbody.insertBefore(row.tr, before ?? null);
      this.updateEmpty();
    }
    row.data = data;
    const text = cellText(data);
    for (const key of CELLS) setText(row.cells[key], text[key]);
    const title = drops(data.drops);
    if (row.cells.dropped.title !== title) row.cells.dropped.title = title;
    row.cells.dropped.classList.toggle("warn", data.dropped > 0);
    row.cells.lost.classList.toggle("warn", data.lost > 0);
    this.scheduleReorder();
  }

  remove(id: string): void {
    const row = this.rows.get(id);
    if (!row) return;
    row.tr.remove();
    this.rows.delete(id);
    this.updateEmpty();
  }

  clear(): void {
    for (const row of this.rows.values()) row.tr.remove();
    this.rows.clear();
    this.updateEmpty();
  }

  /** The view's sort, from the summary: marks the header and re-orders if it changed. */
  setSort(key: SortKey, desc: boolean): void {
    if (key === this.sortKey && desc === this.desc) return;
    this.sortKey = key;
    this.desc = desc;
    for (const th of this.table.querySelectorAll<HTMLTableCellElement>("th[data-sort]")) {
      const on = th.dataset["sort"] === key;
      th.classList.toggle("sorted", on);
      th.classList.toggle("desc", on && desc);
      th.setAttribute("aria-sort", on ? (desc ? "descending" : "ascending") : "none");
    }
    this.scheduleReorder();
  }

  setReadOnly(readOnly: boolean): void {
    this.readOnly = readOnly;
    for (const row of this.rows.values()) row.end.hidden = readOnly;
  }

  setSelected(id: string | null): void {
    if (this.selected !== null) this.rows.get(this.selected)?.tr.classList.remove("selected");
    this.selected = id;
    if (id !== null) this.rows.get(id)?.tr.classList.add("selected");
  }

  private createRow(id: string, data: CallRow): Row {
    const tr = el("tr");
    tr.dataset["id"] = id;
    tr.tabIndex = 0;
    const cells = {} as Record<CellKey, HTMLTableCellElement>;
    for (const key of CELLS) {
      const td = el("td", `c-${key}`);
      cells[key] = td;
      tr.appendChild(td);
    }
    const actions = el("td", "c-actions");
    const end = el("button", "end", "End");
    end.type = "button";
    end.hidden = this.readOnly;
    actions.appendChild(end);
    tr.appendChild(actions);
    if (id === this.selected) tr.classList.add("selected");
    return { tr, cells, end, data };
  }

  /** Re-orders once after a batch of messages (on the next frame), moving only when needed. */
  private scheduleReorder(): void {
    if (this.reorderPending) return;
    this.reorderPending = true;
    requestAnimationFrame(() => {
      this.reorderPending = false;
      this.reorder();
    });
  }

  private reorder(): void {
    const cmp = compare(this.sortKey, this.desc);
    const sorted = [...this.rows.values()].sort((a, b) => cmp(a.data, b.data));
    let current = this.tbody.firstElementChild;
    for (const row of sorted) {
      if (current === row.tr) {
        current = current.nextElementSibling;
      } else {
        this.tbody.insertBefore(row.tr, current);
      }
    }
  }

  private updateEmpty(): void {
    this.empty.hidden = this.rows.size > 0;
  }
}
