import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../kube/objects.ts";
import { createLogger } from "../../log/logger.ts";
import { createControllerMetrics } from "../../metrics/controller-metrics.ts";
import { DEFAULT_POD_SETTINGS } from "../../sandbox/pod-settings.ts";
import type { ClusterWriter } from "../cluster-port.ts";
import { createNetworkVerifier } from "./network-verification.ts";
import type { PolicyState } from "./policy-state.ts";
import { LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";

// The verifier's bookkeeping over an in-memory writer that plays the kubelet: the proof that a real cluster is
// classified right is test/e2e/network-policy.test.ts (Verified) and the integration test (Unknown).
function fakeCluster(phases: { open: string; closed: string }) {
  const objects = new Map<string, KubeObject>();
  const deleted: string[] = [];
  const writer: ClusterWriter = {
    async apply(obj) {
      const role = obj.metadata.labels?.["leviath.dev/network-probe-role"];
      const status = role === "server" ? { phase: "Running", podIP: "10.0.0.9" } : role ? { phase: phases[role as "open" | "closed"] } : undefined;
      objects.set(`${obj.kind}/${obj.metadata.name}`, { ...obj, ...(status ? { status } : {}) } as KubeObject);
    },
    async read(_res, _ns, name) {
      return objects.get(`Pod/${name}`);
    },
    async delete(obj) {
      deleted.push(`${obj.kind}/${obj.metadata.name}`);
      objects.delete(`${obj.kind}/${obj.metadata.name}`);
    },
    deleteAtVersion: async () => true,
    readMetadata: async () => undefined,
    applyStatus: async () => undefined,
    createOrGet: async (obj) => obj,
    createOrFind: async (obj) => ({ created: true, object: obj }),
    replace: async () => undefined,
    create: async () => undefined,
  };
  return { writer, objects, deleted };
}

const policy = (networkEnforcement: unknown): PolicyState => ({ kind: "valid", generation: 1, spec: LeviathPolicySpecSchema.parse({ networkEnforcement }) });

async function probeOnce(phases: { open: string; closed: string }) {
  const cluster = fakeCluster(phases);
  const metrics = createControllerMetrics();
  let changes = 0;
  const verifier = createNetworkVerifier({
    writer: cluster.writer, policy: () => policy({ verify: true, namespace: "probes" }), settings: DEFAULT_POD_SETTINGS,
    nowMs: () => Date.parse("2026-01-01T00:00:00Z"), newId: () => "0123456789abcdef", log: createLogger("silent"), metrics,
    onChange: () => { changes += 1; }, tickMs: 3_600_000,
  });
  verifier.start();
  for (let i = 0; i < 50 && verifier.state().checkedAt === undefined; i++) await new Promise((r) => setTimeout(r, 10));
  await verifier.stop();
  return { state: verifier.state(), cluster, metrics: await metrics.registry.metrics(), changes };
}

describe("createNetworkVerifier", () => {
  it("says NotEnforced when the client under the deny-all policy connects, and deletes everything it made", async () => {
    const { state, cluster, metrics, changes } = await probeOnce({ open: "Succeeded", closed: "Succeeded" });
    expect(state).toMatchObject({ state: "NotEnforced", checkedAt: "2026-01-01T00:00:00Z" });
    expect(changes).toBe(1);
    expect(cluster.objects.size).toBe(0);
    expect(cluster.deleted.sort()).toEqual([
      "NetworkPolicy/leviath-netprobe-0123456789-deny", "Pod/leviath-netprobe-0123456789-closed",
      "Pod/leviath-netprobe-0123456789-open", "Pod/leviath-netprobe-0123456789-server",
    ]);
    expect(metrics).toMatch(/^leviath_network_probes_total\{result="NotEnforced"\} 1$/m);
    expect(metrics).toMatch(/^leviath_network_enforcement\{state="NotEnforced"\} 1$/m);
  });

  it("says Verified only when the control connects and the policed client does not", async () => {
    expect((await probeOnce({ open: "Succeeded", closed: "Failed" })).state.state).toBe("Verified");
    expect((await probeOnce({ open: "Failed", closed: "Failed" })).state.state).toBe("Unknown");
  });

  it("runs no probe while verify is off", async () => {
    const cluster = fakeCluster({ open: "Succeeded", closed: "Failed" });
    const verifier = createNetworkVerifier({
      writer: cluster.writer, policy: () => policy(undefined), settings: DEFAULT_POD_SETTINGS, nowMs: () => 0, newId: () => "x",
      log: createLogger("silent"), metrics: createControllerMetrics(), onChange: () => undefined, tickMs: 3_600_000,
    });
    verifier.start();
    await verifier.stop();
    expect(verifier.state().state).toBe("Unknown");
    expect(verifier.state().message).toMatch(/verify is off/);
    expect(cluster.deleted).toEqual([]);
  });
});
