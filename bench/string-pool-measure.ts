// What the controller caches' string pool saves (issue 20, third pass): 10,000 Run-shaped watch events parsed one
// by one (fresh strings each, as JSON.parse makes them), each Run three times (added, then two status updates),
// cached with and without the pool; the heap used after full GCs.
// Run with: node --expose-gc bench/string-pool-measure.ts [pool]
import { createStringPool } from "../src/controller/cached-strings.ts";
const run = (i: number) => JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { creationTimestamp: "2026-12-01T20:17:49Z", generation: 1, name: `big-${i}`, namespace: "bench", resourceVersion: String(100000 + i), uid: `97c81855-d19a-46b4-9da2-${String(i).padStart(12, "0")}` }, spec: { agentRef: { name: "notes" }, task: "benchmark" }, status: { agent: { generation: 1, name: "notes" }, conditions: [
  { lastTransitionTime: "2026-12-01T20:17:50Z", message: "pinned to Agent 'notes' generation 1 and LeviathPolicy generation 1", observedGeneration: 1, reason: "Resolved", status: "True", type: "PolicyResolved" },
  { lastTransitionTime: "2026-12-01T20:17:50Z", message: `waiting for sandbox pods big-${i}-sbx-ca9b75cb8e340c42, big-${i}-sbx-4c341ac0b5e189ff to be Ready (deadline 2026-12-01T20:22:50Z)`, observedGeneration: 1, reason: "WaitingForPods", status: "False", type: "SandboxReady" },
  { lastTransitionTime: "2026-12-01T20:17:50Z", message: "NetworkPolicy 'x-isolate' denies all ingress and egress of the sandbox pods; applied, enforcement not verified", observedGeneration: 1, reason: "NetworkPolicyApplied", status: "True", type: "NetworkIsolated" },
  { lastTransitionTime: "2026-12-01T20:17:50Z", message: "no prompt is waiting", observedGeneration: 1, reason: "NoPendingApproval", status: "False", type: "AwaitingApproval" },
  { lastTransitionTime: "2026-12-01T20:17:50Z", message: "namespace 'bench' enforces Pod Security 'restricted' (pod-security.kubernetes.io/enforce=restricted)", observedGeneration: 1, reason: "Restricted", status: "True", type: "PodSecurityEnforced" },
  { lastTransitionTime: "2026-12-01T20:17:50Z", message: "the run is Pending", observedGeneration: 1, reason: "Running", status: "False", type: "Completed" },
], enginePod: `big-${i}-engine`, phase: "Pending", policy: { generation: 1, name: "cluster" }, sandboxes: [{ image: "debian:bookworm-slim", kind: "container", network: false, pod: `big-${i}-sbx-ca9b75cb8e340c42`, ready: false, signature: "ca9b75cb8e340c42", stages: ["survey", "digest"] }] } });
const gc = () => { for (let k = 0; k < 4; k++) (globalThis as { gc?: () => void }).gc!(); };
const usePool = process.argv[2] === "pool";
const share = createStringPool();
gc();
const base = process.memoryUsage().heapUsed;
const cache = new Map<string, unknown>();
for (let round = 0; round < 3; round++) for (let i = 0; i < 10_000; i++) { const o = JSON.parse(run(i)); cache.set(`bench/big-${i}`, usePool ? share(o) : o); }
gc();
console.log(usePool ? "pool" : "none", ((process.memoryUsage().heapUsed - base) / 2 ** 20).toFixed(1), "MiB for", cache.size, "Runs");
