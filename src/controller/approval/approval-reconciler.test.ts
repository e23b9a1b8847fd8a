import { describe, expect, it } from "vitest";
import { KubeApiError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ResourceName } from "../../kube/resources.ts";
import { buildApprovalRelayObjects } from "../../sandbox/approval-relay.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { createApprovalReconciler } from "./approval-reconciler.ts";

// The relay's reader at a Run's end: the Run reconciler drops the reader Role as the Run finishes, while an Approval
// pass may still see the Run running and the Role in its cache. The server then refuses the binding (404: its Role is
// not there). That is the healthy cluster's race, so it is a recheck, not a reconcile error (issue 44: quiet on a
// healthy cluster); any other refusal is still an error.

const RUN = { name: "job", namespace: "team", uid: "run-uid" };
const run = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { ...RUN }, spec: { agentRef: { name: "bot" } }, status: { phase: "Running" } } as KubeObject;

function fakeCache(objects: Partial<Record<ResourceName, KubeObject[]>>): ClusterCache {
  return {
    get: (res, ns, name) => objects[res]?.find((o) => o.metadata.namespace === ns && o.metadata.name === name),
    list: (res, ns) => (objects[res] ?? []).filter((o) => ns === undefined || o.metadata.namespace === ns),
    listOwnedBy: () => [],
  };
}

/** A writer whose writes of `kind` fail with `error`; it records every write. */
function failingWriter(error: Error, kind = "RoleBinding"): { writer: ClusterWriter; writes: string[] } {
  const writes: string[] = [];
  const note = async (verb: string, obj: KubeObject) => {
    writes.push(`${verb} ${obj.kind}/${obj.metadata.name}`);
    if (obj.kind === kind) throw error;
  };
  const unused = () => Promise.reject(new Error("not expected in this test"));
  return {
    writes,
    writer: {
      apply: (obj) => note("apply", obj), replace: (obj) => note("replace", obj), create: (obj) => note("create", obj),
      applyStatus: unused, read: unused, readMetadata: unused, createOrGet: unused, createOrFind: unused, delete: unused, deleteAtVersion: unused,
    },
  };
}

/** The cache of the race: an Approval of the Run just deleted, the relay still naming it, the Role still cached, the binding too when `bound`. */
function raceCache(bound = false): ClusterCache {
  const { role, roleBinding, relay } = buildApprovalRelayObjects(RUN, "bot", []);
  const held = { ...relay, metadata: { ...relay.metadata, resourceVersion: "7" }, data: { "a-x": JSON.stringify({ approval: "gone" }) } } as KubeObject;
  return fakeCache({ run: [run], role: [role], ...(bound ? { roleBinding: [roleBinding] } : {}), configMap: [held] });
}

describe("the Approval reconciler's relay at a Run's end", () => {
  it("rechecks when the server says the reader Role is gone under the binding, writing nothing after it", async () => {
    const { writer, writes } = failingWriter(new KubeApiError(404, "NotFound", 'roles.rbac.authorization.k8s.io "job-approval-reader" not found'));
    const reconcile = createApprovalReconciler({ cache: raceCache(), writer, nowMs: () => 0, ttlMs: 60_000 });
    await expect(reconcile("team/gone")).resolves.toEqual({ requeueAfterMs: 1000 });
    expect(writes).toEqual(["apply RoleBinding/job-approval-reader"]);
  });

  it("rechecks when another pass wrote the relay first (409 on the replace at the cached version)", async () => {
    const { writer, writes } = failingWriter(new KubeApiError(409, "Conflict", "the object has been modified"), "ConfigMap");
    const reconcile = createApprovalReconciler({ cache: raceCache(true), writer, nowMs: () => 0, ttlMs: 60_000 });
    await expect(reconcile("team/gone")).resolves.toEqual({ requeueAfterMs: 1000 });
    expect(writes).toEqual(["replace ConfigMap/job-approvals"]);
  });

  it("still fails on any other refusal of the binding", async () => {
    const { writer } = failingWriter(new KubeApiError(403, "Forbidden", "forbidden"));
    const reconcile = createApprovalReconciler({ cache: raceCache(), writer, nowMs: () => 0, ttlMs: 60_000 });
    await expect(reconcile("team/gone")).rejects.toThrow("forbidden");
  });
});
