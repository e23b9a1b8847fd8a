import { describe, expect, it } from "vitest";
import { buildCacheTransforms, createConfigMapInterning, createTextInterner, keepMetadataOnly, keepPodFields } from "./cached-fields.ts";

// A pod as the API server serves it after the kubelet reported on it (trimmed of nothing).
const served = () => ({
  apiVersion: "v1", kind: "Pod",
  metadata: {
    name: "r-engine", namespace: "ns", uid: "u1", resourceVersion: "7", generation: 1, creationTimestamp: "2026-12-01T00:00:00Z",
    labels: { "leviath.dev/run": "r" }, annotations: { "leviath.dev/spec-hash": "abc" }, finalizers: ["x"],
    ownerReferences: [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: "r", uid: "run-uid", controller: true }],
  },
  spec: { containers: [{ name: "agent", image: "r:1" }], volumes: [{ name: "policy", configMap: { name: "r-policy" } }] },
  status: {
    phase: "Failed", reason: "Evicted", message: "gone", qosClass: "Burstable", hostIP: "10.0.0.1", startTime: "2026-12-01T00:00:01Z",
    conditions: [{ type: "Ready", status: "False", lastTransitionTime: "2026-12-01T00:00:02Z", reason: "PodFailed" }],
    containerStatuses: [
      { name: "agent", image: "r:1", imageID: "sha256:1", restartCount: 0, ready: false, state: { terminated: { exitCode: 3, reason: "Error", message: "boom", startedAt: "t", finishedAt: "t", containerID: "c" } } },
      { name: "other", image: "o:1", ready: true, state: { running: { startedAt: "t" } } },
    ],
  },
});

describe("keepPodFields", () => {
  it("keeps the metadata and the status the Run reconciler reads, and drops the spec", () => {
    const full = served();
    const kept = keepPodFields(full);
    expect(kept).toEqual({
      apiVersion: "v1", kind: "Pod",
      metadata: { ...full.metadata, finalizers: undefined },
      status: {
        phase: "Failed", reason: "Evicted", message: "gone",
        conditions: [{ type: "Ready", status: "False" }],
        containerStatuses: [{ name: "agent", state: { terminated: { exitCode: 3, reason: "Error", message: "boom" } } }, { name: "other" }],
      },
    });
    expect(kept).not.toHaveProperty("spec");
    expect(kept.metadata).not.toHaveProperty("finalizers");
  });

  it("keeps the scheduler's reason and message of a pod it could not place, and of no other condition", () => {
    const pod = served();
    pod.status.conditions = [
      { type: "PodScheduled", status: "False", lastTransitionTime: "t", reason: "Unschedulable", message: "0/1 nodes are available" } as never,
      { type: "Ready", status: "False", lastTransitionTime: "t", reason: "PodFailed" },
    ];
    expect((keepPodFields(pod) as unknown as { status: { conditions: unknown[] } }).status.conditions).toEqual([
      { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/1 nodes are available" }, { type: "Ready", status: "False" },
    ]);
  });

  it("keeps a pod the server has not reported on as its metadata", () => {
    const { status: _status, ...bare } = served();
    expect(keepPodFields(bare)).toEqual({ apiVersion: "v1", kind: "Pod", metadata: keepMetadataOnly(bare).metadata });
  });
});

describe("keepMetadataOnly", () => {
  it("keeps the header and the metadata a reader uses, nothing of spec or status", () => {
    const ns = { apiVersion: "v1", kind: "Namespace", metadata: { name: "ns", uid: "u", resourceVersion: "1", labels: { "pod-security.kubernetes.io/enforce": "restricted" } }, spec: { finalizers: ["kubernetes"] }, status: { phase: "Active" } };
    expect(keepMetadataOnly(ns)).toEqual({ apiVersion: "v1", kind: "Namespace", metadata: ns.metadata });
  });
});

describe("createTextInterner", () => {
  it("keeps one entry per distinct text and gives back an equal text", () => {
    const intern = createTextInterner();
    const text = JSON.stringify({ policy: "x".repeat(20_000) });
    expect(intern(text)).toBe(text);
    expect(intern(JSON.parse(JSON.stringify(text)) as string)).toBe(text);
    expect(intern.size).toBe(1);
    // Same length, other content: a text of its own (texts are told apart by content, not by length).
    const other = text.replace("x", "y");
    expect(intern(other)).toBe(other);
    expect(intern.size).toBe(2);
  });

  it("is bounded in entries and keeps no text past its length cap", () => {
    const intern = createTextInterner(3, 10);
    for (const t of ["a", "b", "c", "d", "e"]) intern(t);
    expect(intern.size).toBe(3);
    expect(intern("0123456789-too-long")).toBe("0123456789-too-long");
    expect(intern.size).toBe(3);
  });
});

describe("createConfigMapInterning", () => {
  it("leaves every ConfigMap's data equal to what was served", () => {
    const intern = createTextInterner();
    const keep = createConfigMapInterning(intern);
    const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { "run-policy.json": "{\n  \"a\": 1\n}\n", "runtime.json": "{}\n" } });
    const a = keep(cm("a"));
    const b = keep(cm("b"));
    expect(a).toEqual(cm("a"));
    expect(b).toEqual(cm("b"));
    expect(intern.size).toBe(2);
    expect(keep({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "empty" } })).toEqual({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "empty" } });
  });
});

describe("buildCacheTransforms", () => {
  it("trims pods, ConfigMaps, Namespaces and RuntimeClasses and keeps Runs, Agents and the rest whole", () => {
    const t = buildCacheTransforms();
    expect(Object.keys(t).sort()).toEqual(["configMap", "namespace", "pod", "runtimeClass"]);
  });
});
