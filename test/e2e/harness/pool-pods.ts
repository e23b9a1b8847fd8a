// What the warm-pool e2e test needs of a pool on the real node: its ready pool pods (the pool pods' workspace claims
// are bound by the node's provisioner, test/e2e/harness/local-path.ts, as any Run's).
import { waitFor } from "../../integration/harness/index.ts";
import { getJson } from "./kube-json.ts";
import { NS } from "./operator-fixture.ts";

type PoolPod = {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
};

/** The pool's unbound engine pods whose Ready condition is True (the ones a Run may adopt; their sandbox pods come with them). */
export async function readyPoolPods(agent: string): Promise<PoolPod[]> {
  const pods = await getJson<{ items: PoolPod[] }>(["get", "pods", "-n", NS, "-l", `leviath.dev/pool=${agent},leviath.dev/pool-state=ready,leviath.dev/component=engine`]);
  return pods.items.filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true);
}

/** Waits for a ready pool pod of `agent` not named in `other`; returns it. */
export async function waitForReadyPoolPod(agent: string, other: readonly string[] = [], timeoutMs = 240_000): Promise<PoolPod> {
  return waitFor(async () => (await readyPoolPods(agent)).find((p) => !other.includes(p.metadata.name)),
    { timeoutMs, intervalMs: 500, description: `a ready pool pod of ${agent}${other.length > 0 ? ` other than ${other.join(", ")}` : ""}` });
}
