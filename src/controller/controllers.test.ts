import { describe, expect, it } from "vitest";
import type { KubeObject } from "../kube/objects.ts";
import { RESOURCES, type ResourceName } from "../kube/resources.ts";
import { MARKED_RESOURCES } from "../sandbox/authorship-marks.ts";
import { approvalController } from "./approval/approval-controller.ts";
import type { ClusterCache } from "./cluster-port.ts";
import { CONTROLLERS } from "./controllers.ts";
import { policyController } from "./leviath-policy/policy-controller.ts";
import { poolController } from "./pool/pool-controller.ts";
import { runController } from "./run/run-controller.ts";

const obj = (kind: string, namespace: string | undefined, name: string, extra: Record<string, unknown> = {}): KubeObject =>
  ({ apiVersion: "v1", kind, metadata: { name, ...(namespace ? { namespace } : {}) }, ...extra }) as KubeObject;

function fakeCache(objects: Partial<Record<ResourceName, KubeObject[]>>): ClusterCache {
  return {
    get: (res, ns, name) => objects[res]?.find((o) => o.metadata.namespace === ns && o.metadata.name === name),
    list: (res, ns) => (objects[res] ?? []).filter((o) => ns === undefined || o.metadata.namespace === ns),
    listOwnedBy: () => [],
  };
}

const watch = (decl: typeof runController, kind: ResourceName) => decl.watches!.find((w) => w.kind === kind)!;

describe("the controller declarations", () => {
  const cache = fakeCache({
    run: [
      obj("Run", "a", "unpinned", { spec: { agentRef: { name: "bot" } } }),
      obj("Run", "a", "pinned", { spec: { agentRef: { name: "bot" } }, status: { agent: { name: "bot", generation: 1 }, phase: "Running" } }),
      obj("Run", "a", "done", { spec: { agentRef: { name: "bot" } }, status: { agent: { name: "bot", generation: 1 }, phase: "Succeeded" } }),
      obj("Run", "b", "other", { spec: { agentRef: { name: "bot" } } }),
    ],
    approval: [obj("Approval", "a", "yes", { spec: { runRef: { name: "pinned" } } }), obj("Approval", "a", "stray", { spec: { runRef: { name: "gone" } } })],
  });

  it("name each controller once, in the order their workers start", () => {
    expect(CONTROLLERS.map((c) => c.name)).toEqual(["agent", "run", "policy", "approval", "records"]);
  });

  it("bring back only the unpinned Runs of an Agent, and the live Runs of a namespace", () => {
    expect([...watch(runController, "agent").keys(obj("Agent", "a", "bot"), cache)]).toEqual(["a/unpinned"]);
    expect([...watch(runController, "policy").keys(obj("LeviathPolicy", undefined, "cluster"), cache)]).toEqual(["a/unpinned", "b/other"]);
    expect([...watch(runController, "namespace").keys(obj("Namespace", undefined, "a"), cache)]).toEqual(["a/unpinned", "a/pinned"]);
    expect([...runController.signals!.networkEnforcement!(cache)]).toEqual(["a/unpinned", "a/pinned", "b/other"]);
  });

  it("map every policy event to the singleton's key", () => {
    expect([...policyController.for.keys(obj("LeviathPolicy", undefined, "other"), cache)]).toEqual(["cluster"]);
    expect([...policyController.startKeys!(cache)]).toEqual(["cluster"]);
  });

  it("bring back a Run's Approvals on a change of the Run or of its relay", () => {
    expect([...watch(approvalController, "run").keys(obj("Run", "a", "pinned"), cache)]).toEqual(["a/yes"]);
    const relay = obj("ConfigMap", "a", "pinned-approvals");
    relay.metadata.labels = { "leviath.dev/component": "approvals" };
    relay.metadata.ownerReferences = [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: "pinned", uid: "u" }];
    expect([...watch(approvalController, "configMap").keys(relay, cache)]).toEqual(["a/yes"]);
    expect([...watch(approvalController, "configMap").keys(obj("ConfigMap", "a", "pinned-policy"), cache)]).toEqual([]);
  });
});

describe("the chart's authorship policy", () => {
  it("guards every kind a controller owns, and the Approvals the controller binds", () => {
    const owned: ResourceName[] = [...new Set([...CONTROLLERS, poolController].flatMap((c) => c.owns ?? [])), "approval"];
    const guarded = (name: ResourceName) => MARKED_RESOURCES.some((m) => m.group === RESOURCES[name].group && m.resources.includes(RESOURCES[name].plural));
    expect(owned.filter((name) => !guarded(name))).toEqual([]);
  });
});
