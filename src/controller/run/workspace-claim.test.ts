import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "../../api/leviath-policy.ts";
import { RunSpecSchema, WORKSPACE_ROOT } from "../../api/run.ts";
import { ENGINE_PATHS } from "../../sandbox/pods.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ClusterCache, ClusterWriter } from "../cluster-port.ts";
import { checkWorkspaceClaim, decideWorkspaceClaim, readWorkspaceClaim, listPolicyClaims, type WorkspaceClaimFacts } from "./workspace-claim.ts";

const policy = LeviathPolicySpecSchema.parse({
  ceilings: { workspaceClaims: ["team/shared"] },
  readPaths: { volumes: [{ path: "/data/docs", volume: { persistentVolumeClaim: { claimName: "docs" } } }, { path: "/data/cfg", volume: { configMap: { name: "cfg" } } }] },
  sandbox: { mounts: [{ path: "/cache", volume: { persistentVolumeClaim: { claimName: "cache" } } }] },
});

const facts = (over: Partial<WorkspaceClaimFacts>): WorkspaceClaimFacts => ({
  namespace: "team", run: "notes", ceilings: policy.ceilings, policyClaims: listPolicyClaims(policy), heldBy: [], ...over,
});

describe("the workspace mount path", () => {
  it.each(["/workspace", "/workspace/repo", "/workspace/a/b_c-d.e"])("accepts %s", (mountPath) => {
    expect(RunSpecSchema.safeParse({ agentRef: { name: "a" }, workspace: { mountPath } }).success).toBe(true);
  });

  it.each(["/app/bin", "/app/node_modules", "/usr/local/bin", "/etc", "/tmp", "/var/run/secrets", "/proc", "/", "/workspace/", "/workspace/../app/bin", "/workspace/.", "/workspaces", "/home/user", "workspace"])(
    "refuses %s, naming the field", (mountPath) => {
      const parsed = RunSpecSchema.safeParse({ agentRef: { name: "a" }, workspace: { mountPath } });
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(["workspace", "mountPath"]);
    },
  );

  it("defaults to /workspace, where none of the sidecar's own paths lie", () => {
    expect(RunSpecSchema.parse({ agentRef: { name: "a" } }).workspace.mountPath).toBe(WORKSPACE_ROOT);
    for (const path of Object.values(ENGINE_PATHS)) expect(`${path}/`.startsWith(`${WORKSPACE_ROOT}/`)).toBe(false);
  });
});

describe("decideWorkspaceClaim", () => {
  it("lists the claims of the policy's read-path volumes and sandbox mounts by field", () => {
    expect(listPolicyClaims(policy)).toEqual([{ field: "spec.readPaths.volumes[0]", claimName: "docs" }, { field: "spec.sandbox.mounts[0]", claimName: "cache" }]);
  });

  it("lets a Run work in the claim the operator makes for it", () => {
    expect(decideWorkspaceClaim(facts({}))).toBeUndefined();
  });

  it("refuses a claim under the Run's own claim name that does not name the Run, and leaves one that does to the pass that makes the claim", () => {
    const refused = {
      reason: "WorkspaceInUse", message: "spec.workspace: PersistentVolumeClaim 'notes-workspace' exists and was not made by the operator for this Run; the Run waits until it is gone",
    };
    expect(decideWorkspaceClaim(facts({ existing: { thisRun: false } }))).toEqual(refused);
    expect(decideWorkspaceClaim(facts({ existing: { madeFor: "other", thisRun: false } }))).toEqual(refused);
    // Naming this Run's uid as its controller (the operator's claim left by a pass that stopped before recording
    // its uid, or a planted one): never mounted unless its uid is on record, else deleted and made again (own-claim.ts).
    expect(decideWorkspaceClaim(facts({ existing: { madeFor: "notes", thisRun: true } }))).toBeUndefined();
  });

  it("refuses a named claim the policy does not list", () => {
    expect(decideWorkspaceClaim(facts({ claimName: "other" }))).toEqual({
      reason: "RefusedByPolicy",
      message: "spec.workspace.claimName: PersistentVolumeClaim 'other' is not allowed by the LeviathPolicy (spec.ceilings.workspaceClaims has no 'team/other'); leave claimName unset to work in a claim the operator makes for this Run",
    });
    expect(decideWorkspaceClaim(facts({ claimName: "shared", namespace: "elsewhere" }))?.reason).toBe("RefusedByPolicy");
    expect(decideWorkspaceClaim(facts({ claimName: "shared" }))).toBeUndefined();
  });

  it("refuses the claim of a policy volume, listed or not, named or under the Run's own claim name", () => {
    const listed = { ...policy.ceilings, workspaceClaims: ["team/docs", "team/cache"] };
    expect(decideWorkspaceClaim(facts({ claimName: "docs", ceilings: listed }))).toEqual({
      reason: "RefusedByPolicy", message: "spec.workspace.claimName: PersistentVolumeClaim 'docs' backs the LeviathPolicy's spec.readPaths.volumes[0]; a workspace never mounts a policy volume's claim",
    });
    expect(decideWorkspaceClaim(facts({ claimName: "cache", ceilings: listed }))?.message).toContain("backs the LeviathPolicy's spec.sandbox.mounts[0]");
    expect(decideWorkspaceClaim(facts({ policyClaims: [{ field: "spec.readPaths.volumes[3]", claimName: "notes-workspace" }] }))?.message)
      .toBe("spec.workspace: PersistentVolumeClaim 'notes-workspace' backs the LeviathPolicy's spec.readPaths.volumes[3]; a workspace never mounts a policy volume's claim");
  });

  it("refuses another Run's workspace: the claim the operator made for it, or a listed claim it works in", () => {
    const listed = { ...policy.ceilings, workspaceClaims: ["team/other-workspace", "team/shared"] };
    expect(decideWorkspaceClaim(facts({ claimName: "other-workspace", ceilings: listed, existing: { madeFor: "other", thisRun: false } }))).toEqual({
      reason: "WorkspaceInUse", message: "spec.workspace.claimName: PersistentVolumeClaim 'other-workspace' is the workspace the operator made for Run 'other'",
    });
    expect(decideWorkspaceClaim(facts({ claimName: "shared", heldBy: [{ run: "first", claimName: "shared" }] }))).toEqual({
      reason: "WorkspaceInUse", message: "spec.workspace.claimName: PersistentVolumeClaim 'shared' is already the workspace of Run 'first'; the Run waits until that Run has finished",
    });
  });
});

describe("checkWorkspaceClaim", () => {
  const listed = LeviathPolicySpecSchema.parse({ ceilings: { workspaceClaims: ["team/shared"] } });
  const runOf = (name: string, created: string, spec: Record<string, unknown>, status?: Record<string, unknown>): KubeObject =>
    ({ apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name, namespace: "team", uid: `uid-${name}`, creationTimestamp: created }, spec, ...(status ? { status } : {}) }) as KubeObject;
  const snapshotOf = (run: string, workspace: Record<string, unknown>): KubeObject => ({
    apiVersion: "v1", kind: "ConfigMap",
    metadata: { name: `${run}-policy`, namespace: "team", ownerReferences: [{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: run, uid: `uid-${run}`, controller: true }] },
    data: { "controller.json": JSON.stringify({ workspace }) },
  }) as KubeObject;
  const check = (objects: KubeObject[], name = "me") => {
    const cache: ClusterCache = {
      get: (res, _ns, n) => objects.find((o) => o.kind === (res === "run" ? "Run" : "ConfigMap") && o.metadata.name === n),
      list: () => objects.filter((o) => o.kind === "Run"),
      listOwnedBy: () => [],
    };
    const writer = { readMetadata: async () => undefined } as unknown as ClusterWriter;
    const ref = { name, namespace: "team", uid: `uid-${name}` };
    const workspace = { mountPath: "/workspace", claimName: "shared", size: "1Gi", accessMode: "ReadWriteOnce" } as const;
    return readWorkspaceClaim({ cache, writer }, ref, workspace).then((reading) => checkWorkspaceClaim(reading, ref, workspace, listed));
  };
  const me = runOf("me", "2026-01-01T00:00:10Z", { workspace: { claimName: "shared" } });

  it("finds the claim another Run pinned, whatever its spec says since", async () => {
    const other = runOf("other", "2026-01-01T00:00:20Z", { workspace: {} }, { agent: { name: "a" } });
    expect((await check([me, other, snapshotOf("other", { claimName: "shared" })]))?.message).toContain("is already the workspace of Run 'other'");
    expect(await check([me, other, snapshotOf("other", {})])).toBeUndefined();
  });

  it("leaves out finished Runs, and of two not yet pinned lets the older one hold the claim (same second: by name)", async () => {
    const spec = { workspace: { claimName: "shared" } };
    expect(await check([me, runOf("done", "2026-01-01T00:00:01Z", spec, { phase: "Succeeded", agent: { name: "a" } })])).toBeUndefined();
    expect((await check([me, runOf("older", "2026-01-01T00:00:01Z", spec)]))?.message).toContain("of Run 'older'");
    expect(await check([me, runOf("younger", "2026-01-01T00:00:30Z", spec)])).toBeUndefined();
    expect((await check([me, runOf("a-run", "2026-01-01T00:00:10Z", spec)]))?.message).toContain("of Run 'a-run'");
    expect(await check([me, runOf("z-run", "2026-01-01T00:00:10Z", spec)])).toBeUndefined();
  });
});
