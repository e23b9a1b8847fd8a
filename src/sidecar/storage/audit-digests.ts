// Which audit ConfigMaps are the sidecar's: it records the name, size and SHA-256 of what it wrote in each in the
// Run's `status.audit` (which only the Run's sidecar and the controller may write), and a ConfigMap is its record
// only as far as its text matches that entry. Anyone who may create ConfigMaps can take an audit name, and set the
// Run as owner; neither makes the object the Run's audit. A chunk only grows, so its recorded bytes are a prefix
// of what a later write (whose status update did not happen yet) left there.
import { createHash } from "node:crypto";
import type { AuditChunkDigest } from "../../api/status.ts";

/** The entry for `text` written under `name`. */
export function computeChunkDigest(name: string, text: string): AuditChunkDigest {
  const bytes = Buffer.from(text, "utf8");
  return { name, bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
}

/**
 * What of a chunk's text the sidecar wrote: `verified` is the text its entry covers (the whole of it, or a prefix),
 * `extraBytes` how many bytes follow it (written by nobody it can vouch for); `verified` is undefined when the text
 * is missing or its first `bytes` bytes do not match.
 */
export function verifyChunk(entry: AuditChunkDigest, text: string | undefined): { readonly verified: string | undefined; readonly extraBytes: number } {
  if (text === undefined) return { verified: undefined, extraBytes: 0 };
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length < entry.bytes) return { verified: undefined, extraBytes: 0 };
  const prefix = bytes.subarray(0, entry.bytes);
  if (createHash("sha256").update(prefix).digest("hex") !== entry.sha256) return { verified: undefined, extraBytes: 0 };
  return { verified: prefix.toString("utf8"), extraBytes: bytes.length - entry.bytes };
}

/** The ledger with `entry` in place of the one of the same name, or added at the end. */
export function recordChunkDigest(ledger: readonly AuditChunkDigest[], entry: AuditChunkDigest): AuditChunkDigest[] {
  const at = ledger.findIndex((e) => e.name === entry.name);
  if (at < 0) return [...ledger, entry];
  return ledger.map((e, i) => (i === at ? entry : e));
}

/** One audit ConfigMap as a reader found it: its records (verified text only) or why it is not shown. */
export type ReadChunk =
  | { readonly name: string; readonly text: string; readonly extraBytes: number }
  | { readonly name: string; readonly refused: "missing" | "mismatch" | "unrecorded" };

/**
 * The Run's audit as the sidecar recorded it: each ledger entry's verified text, in ledger order, and every other
 * ConfigMap found under an audit name (`found`, by name) as `unrecorded`. Nothing but verified text is returned as
 * records.
 */
export function readVerifiedAudit(ledger: readonly AuditChunkDigest[], found: ReadonlyMap<string, string | undefined>): ReadChunk[] {
  const chunks: ReadChunk[] = ledger.map((entry) => {
    if (!found.has(entry.name)) return { name: entry.name, refused: "missing" as const };
    const { verified, extraBytes } = verifyChunk(entry, found.get(entry.name));
    return verified === undefined ? { name: entry.name, refused: "mismatch" as const } : { name: entry.name, text: verified, extraBytes };
  });
  const recorded = new Set(ledger.map((e) => e.name));
  const others = [...found.keys()].filter((name) => !recorded.has(name)).sort();
  return [...chunks, ...others.map((name) => ({ name, refused: "unrecorded" as const }))];
}

/** A line for a person about the parts of the audit that were not shown (none: undefined). */
export function describeIgnoredChunks(chunks: readonly ReadChunk[]): string | undefined {
  const notes = chunks.flatMap((c) => {
    if ("refused" in c) {
      if (c.refused === "missing") return [`'${c.name}' is missing`];
      if (c.refused === "mismatch") return [`'${c.name}' does not hold what the sidecar wrote (its SHA-256 in status.audit differs)`];
      return [`'${c.name}' was not written by the Run's sidecar (not in status.audit)`];
    }
    return c.extraBytes > 0 ? [`${c.extraBytes} byte(s) at the end of '${c.name}' are not covered by status.audit`] : [];
  });
  return notes.length === 0 ? undefined : `audit ConfigMaps ignored: ${notes.join("; ")}`;
}
