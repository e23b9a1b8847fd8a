/**
 * Canonical JSON: object keys sorted at every level, so equal values always hash equally. Every pass builds and
 * hashes three pod specs of a few KB, so the value is copied with its keys inserted in sorted order and serialized
 * by JSON.stringify (2.5 times faster than concatenating the same text in JavaScript). An object with an
 * array-index key ("7") is the exception: objects list those first in numeric order whatever the insertion order,
 * so such a value is written key by key instead, giving the same text as ever (existing pods' spec hashes depend on it).
 */
export function buildCanonicalJson(value: unknown): string {
  const found = { indexKey: false };
  const copy = copySorted(value, found);
  return found.indexKey ? writeSorted(value) : JSON.stringify(copy ?? null);
}

/** Array-index keys, which objects enumerate before every other key. */
const INDEX_KEY = /^(?:0|[1-9]\d*)$/;

function copySorted(value: unknown, found: { indexKey: boolean }): unknown {
  if (Array.isArray(value)) return value.map((v) => copySorted(v, found) ?? null);
  if (value === null || typeof value !== "object") return value;
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(obj).sort()) {
    if (INDEX_KEY.test(k)) found.indexKey = true;
    const v = obj[k];
    if (v !== undefined) out[k] = copySorted(v, found);
  }
  return out;
}

/** The same text, written key by key (object keys are strings: the default sort orders them by UTF-16 code unit). */
function writeSorted(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(writeSorted).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const obj = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(obj).sort()) if (obj[k] !== undefined) parts.push(`${JSON.stringify(k)}:${writeSorted(obj[k])}`);
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * A 64-bit FNV-1a digest of the canonical JSON, as 16 hex digits. It names and compares our own objects
 * (sandbox signatures, pod spec hashes); it is not a security boundary, so a non-cryptographic hash is enough.
 * The 64-bit state is kept as two 32-bit halves: the same digest as BigInt arithmetic (the spec hashes of existing
 * pods must not change), without a BigInt per byte, which was 8 % of the controller's CPU under load.
 */
export function computeHash(value: unknown): string {
  // Offset basis 0xcbf29ce484222325; prime 0x100000001b3 = 2^40 + 0x1b3, so h * prime = h * 0x1b3 + (h << 40).
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const bytes = new TextEncoder().encode(buildCanonicalJson(value));
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]!) >>> 0;
    const low = lo * 0x1b3;
    hi = (Math.imul(hi, 0x1b3) + Math.floor(low / 0x100000000) + (lo << 8)) >>> 0;
    lo = low >>> 0;
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}
