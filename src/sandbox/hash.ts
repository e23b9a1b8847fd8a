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

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/**
 * A 64-bit FNV-1a digest of the canonical JSON, as 16 hex digits. It names and compares our own objects
 * (sandbox signatures, pod spec hashes); it is not a security boundary, so a non-cryptographic hash is enough.
 */
export function computeHash(value: unknown): string {
  let h = FNV_OFFSET;
  const bytes = new TextEncoder().encode(buildCanonicalJson(value));
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK;
  return h.toString(16).padStart(16, "0");
}
