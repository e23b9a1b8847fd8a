// Plain-text output of the kubectl plugin, in kubectl's own style: upper-case headers, columns padded by three
// spaces, ages as `45s`, `3m`, `2h`, `4d`.

/** Columns padded to their widest cell, as `kubectl get` prints them. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("   ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}

/** The age of `since` (RFC 3339) at `nowMs`, as kubectl words it; `<unknown>` without a time. */
export function formatAge(since: string | undefined, nowMs: number): string {
  const t = since === undefined ? Number.NaN : Date.parse(since);
  if (Number.isNaN(t)) return "<unknown>";
  const s = Math.max(0, Math.floor((nowMs - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 120 * 60) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** One line of at most `max` characters: whitespace runs folded to one space, an ellipsis where it was cut. */
export function truncateText(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/**
 * Text flattened to one line and, past `max` characters, cut in the middle: a prompt's question may stand at its
 * end ("… Allow it?") and a command's at its start, so both ends stay and the cut says where it is.
 */
export function elideMiddle(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const tail = Math.floor((max - 1) / 3);
  return `${flat.slice(0, max - 1 - tail).trimEnd()}…${flat.slice(flat.length - tail).trimStart()}`;
}

/** A duration flag (`30s`, `5m`, `1h`, or bare seconds) in milliseconds; undefined when it is none of those. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"]!;
  return Math.round(Number(m[1]) * unit);
}
