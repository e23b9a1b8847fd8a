/** Canonical JSON: object keys sorted at every level, so equal values always hash equally. */
export function buildCanonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(buildCanonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${buildCanonicalJson(v)}`).join(",")}}`;
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
  for (const b of new TextEncoder().encode(buildCanonicalJson(value))) {
    lo = (lo ^ b) >>> 0;
    const low = lo * 0x1b3;
    hi = (Math.imul(hi, 0x1b3) + Math.floor(low / 0x100000000) + (lo << 8)) >>> 0;
    lo = low >>> 0;
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}
