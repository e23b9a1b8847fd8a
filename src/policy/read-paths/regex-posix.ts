// ASCII classes (`[[:alpha:]]`, `[[:^digit:]]`) expanded to explicit code point ranges. Both engines
// define them identically; expanding them keeps node-re2's naive `[`/`]` tracking (it treats the
// `]` of `[:alpha:]` as the end of the class) from mistranslating a `\p{...}` later in the class.

type Range = readonly [number, number];

const POSIX_CLASSES: Readonly<Record<string, readonly Range[]>> = {
  alnum: [[0x30, 0x39], [0x41, 0x5a], [0x61, 0x7a]],
  alpha: [[0x41, 0x5a], [0x61, 0x7a]],
  ascii: [[0x00, 0x7f]],
  blank: [[0x09, 0x09], [0x20, 0x20]],
  cntrl: [[0x00, 0x1f], [0x7f, 0x7f]],
  digit: [[0x30, 0x39]],
  graph: [[0x21, 0x7e]],
  lower: [[0x61, 0x7a]],
  print: [[0x20, 0x7e]],
  punct: [[0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e]],
  space: [[0x09, 0x0d], [0x20, 0x20]],
  upper: [[0x41, 0x5a]],
  word: [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]],
  xdigit: [[0x30, 0x39], [0x41, 0x46], [0x61, 0x66]],
};

function hex(cp: number): string {
  return `\\x{${cp.toString(16).toUpperCase()}}`;
}

function complement(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let cursor = 0;
  for (const [lo, hi] of ranges) {
    if (cursor < lo) out.push([cursor, lo - 1]);
    cursor = hi + 1;
  }
  if (cursor <= 0x10ffff) out.push([cursor, 0x10ffff]);
  return out;
}

/**
 * Expand the ASCII class starting at `cs[j]` (`[:name:]` or `[:^name:]`) into class members, or
 * `null` when `cs[j]` does not start one (Rust then reads the `[` as a nested class).
 */
export function expandPosixClass(cs: readonly string[], j: number): { text: string; next: number } | null {
  if (cs[j] !== "[" || cs[j + 1] !== ":") return null;
  let k = j + 2;
  const negated = cs[k] === "^";
  if (negated) k += 1;
  let name = "";
  while (k < cs.length && cs[k] !== ":") name += cs[k++];
  if (cs[k] !== ":" || cs[k + 1] !== "]") return null;
  const ranges = Object.hasOwn(POSIX_CLASSES, name) ? POSIX_CLASSES[name] : undefined;
  if (ranges === undefined) return null;
  const members = negated ? complement(ranges) : ranges;
  const text = members.map(([lo, hi]) => (lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)).join("");
  return { text, next: k + 2 };
}
