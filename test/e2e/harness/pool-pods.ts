// What the warm-pool e2e test needs of a pool on the real node: the workspace volumes its pool pods' claims wait
// for (no provisioner here: each claim `<pod>-workspace` gets the hostPath volume a cold Run's claim gets, made as
// the claim appears) and its ready pool pods.
import { kubectl, waitFor } from "../../integration/harness/index.ts";
import { getJson } from "./kube-json.ts";
import { applyObjects, NS, type Workspaces } from "./operator-fixture.ts";

type Claim = { metadata: { name: string }; spec?: { volumeName?: string } };
type PoolPod = {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
};

/** The pool claims' volumes, made as the claims appear (every 500 ms) until `stop`, which removes them too. */
export interface PoolClaimVolumes {
  /** The PersistentVolumes made so far. */
  readonly volumes: ReadonlySet<string>;
  stop(): Promise<void>;
}

/** Gives every pool claim in the sandbox namespace a hostPath volume of `workspaces`, as a provisioner would. */
export function provisionPoolClaims(workspaces: Workspaces): PoolClaimVolumes {
  const volumes = new Set<string>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const claims = await getJson<{ items: Claim[] }>(["get", "persistentvolumeclaims", "-n", NS, "-l", "leviath.dev/pool"]).catch(() => ({ items: [] }));
      for (const claim of claims.items) {
        const pod = claim.metadata.name.replace(/-workspace$/, "");
        if (claim.spec?.volumeName || volumes.has(`${pod}-workspace`) || pod === claim.metadata.name) continue;
        await applyObjects([workspaces.volume(pod)]);
        volumes.add(`${pod}-workspace`);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  return {
    volumes,
    stop: async () => {
      stopped = true;
      await loop;
      if (volumes.size > 0) await kubectl(["delete", "pv", ...volumes, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    },
  };
}

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
