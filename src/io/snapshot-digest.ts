// The digest of a start snapshot ConfigMap `<run>-policy` (status.snapshotSha256): the controller checks the
// ConfigMap against it on every pass (controller/run/start-snapshot.ts), and a pool pod's sidecar before it
// enforces a snapshot it fetched at bind time (sidecar/cluster/pool-binding.ts).
import { createHash } from "node:crypto";

/** SHA-256 (hex) of a snapshot ConfigMap's data: every key and value, in key order, each NUL-terminated. */
export function computeSnapshotDataSha256(data: Readonly<Record<string, string>>): string {
  const hash = createHash("sha256");
  for (const key of Object.keys(data).sort()) hash.update(`${key}\u0000${data[key]}\u0000`, "utf8");
  return hash.digest("hex");
}
