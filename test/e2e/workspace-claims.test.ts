// The workspace a Run's creator picks, on the real node (issue 29, item 1). The workspace is mounted read-write
// into the sidecar, the agent and every sandbox pod: naming the claim behind the admin's read-path volume (or
// another Run's workspace) would let the model read it with `shell`, and a mountPath over `/app/bin` would run
// what a claim holds as the sidecar. With the operator installed by helm: the API server refuses `/app/bin`, the
// read-path volume's claim and another Run's claim leave those Runs without a pod on the node, and a Run at
// `/workspace/repo` works there while the sidecar's own `/app/bin` stays the image's.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { getJson } from "./harness/kube-json.ts";
import {
  applyObjects, buildTwoStageAgent, cleanUp, conditionOf, createWorkspaces, getRun, installOperator, NS, waitForRunPods,
  type PodList, type RunObject, type Workspaces,
} from "./harness/operator-fixture.ts";
import { execInPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "ws-agent";
const RUN = "ws-nested";
const DOCS_CLAIM = "ws-design-docs";
const DOCS_PV = "ws-design-docs-pv";

const run = (name: string, workspace: Record<string, unknown>) => ({
  apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name, namespace: NS },
  spec: { agentRef: { name: AGENT }, task: "e2e", mode: "interactive", workspace, runtime: { e2e: { holdTool: "send_email" } } },
});

/** The Run once PolicyResolved carries `message`; it has no pod on the node then. */
async function expectRefused(name: string, reason: string, message: string): Promise<void> {
  const refused = await waitFor(async () => {
    const r = await getRun(name);
    return conditionOf(r, "PolicyResolved")?.message === message ? r : undefined;
  }, { timeoutMs: 60_000, intervalMs: 500, description: `${name} refused: ${message}` }) as RunObject;
  expect(refused.status?.phase).toBe("Pending");
  expect(conditionOf(refused, "PolicyResolved")).toMatchObject({ status: "False", reason });
  expect((await getJson<PodList>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${name}`])).items).toEqual([]);
}

describe("a Run's workspace on the real node", () => {
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  let workspaces: Workspaces | undefined;
  let docs: Workspaces | undefined;

  beforeAll(async () => {
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    // Pre-bound at a known host path, not the provisioner's: the test reads the files the pods wrote there.
    workspaces = createWorkspaces("leviath-e2e-ws-");
    // The admin's docs claim names no class ("" is none, not the default): its volume neither.
    docs = createWorkspaces("leviath-e2e-ws-docs-", "");
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: {
        spec: {
          sandbox: { kind: "container", image: sandbox, onUnavailable: "error" },
          toolPermissions: { shell: "allow", submit_output: "allow" },
          // The admin's read path: only the sidecar mounts it, read-only, behind grants. Listed as a workspace claim
          // too, to show a listing does not open a policy volume's claim; so is the nested Run's own claim.
          readPaths: { volumes: [{ path: "/data/design", volume: { persistentVolumeClaim: { claimName: DOCS_CLAIM } } }] },
          ceilings: { workspaceClaims: [`${NS}/${DOCS_CLAIM}`, `${NS}/${RUN}-workspace`] },
        },
      },
    });
    const docsVolume = docs.volume("unused") as { spec: Record<string, unknown> };
    await applyObjects([
      buildTwoStageAgent({
        name: AGENT, sandbox, description: "e2e workspace", toolPermissions: { shell: "allow", submit_output: "allow", send_email: "ask" },
        surveyTools: ["read_file", "shell"], digestTools: ["shell", "send_email", "submit_output"],
      }),
      { apiVersion: "v1", kind: "PersistentVolume", metadata: { name: DOCS_PV }, spec: { ...docsVolume.spec, claimRef: { namespace: NS, name: DOCS_CLAIM } } },
      { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: DOCS_CLAIM, namespace: NS }, spec: { accessModes: ["ReadWriteOnce"], storageClassName: "", volumeName: DOCS_PV, resources: { requests: { storage: "1Gi" } } } },
      workspaces.volume(RUN),
      run(RUN, { mountPath: "/workspace/repo" }),
    ]);
  });

  afterAll(async () => {
    await kubectl(["delete", "run", "ws-peek", "ws-second", "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "pvc", DOCS_CLAIM, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "pv", DOCS_PV, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await cleanUp([RUN], workspaces);
    docs?.remove();
  });

  it("is mounted only under /workspace: the API server refuses /app/bin, naming the field", async () => {
    for (const mountPath of ["/app/bin", "/app/node_modules", "/usr/local/bin"]) {
      const r = await kubectl(["apply", "-f", "-"], { input: JSON.stringify(run("ws-over-bin", { mountPath })), allowFailure: true });
      expect(r.exitCode, r.stdout).not.toBe(0);
      expect(r.stderr).toContain("spec.workspace.mountPath");
    }
    expect((await kubectl(["get", "run", "ws-over-bin", "-n", NS], { allowFailure: true })).exitCode).not.toBe(0);
  });

  it("runs at /workspace/repo in every pod, and the sidecar's own /app/bin is the image's", async () => {
    const pods = await waitForRunPods(RUN, 3);
    for (const pod of pods.filter((p) => p.metadata.name.startsWith(`${RUN}-sbx-`))) {
      const r = await execInPod(NS, pod.metadata.name, `pwd; echo from-${pod.metadata.name} > ./${pod.metadata.name}.txt`);
      expect(r.stdout.trim(), r.stderr).toBe("/workspace/repo");
      expect(readFileSync(join(workspaces!.dir, `${pod.metadata.name}.txt`), "utf8")).toBe(`from-${pod.metadata.name}\n`);
    }
    const sidecar = await execInPod(NS, `${RUN}-engine`, "ls /app/bin; awk '{print $2}' /proc/self/mounts | grep -E '^/(app|usr|workspace)' || true", "sidecar");
    expect(sidecar.stdout.trim().split("\n"), sidecar.stderr).toEqual(["kubectl-leviath", "leviath", "/workspace/repo"]);
  });

  it("may not be the claim behind the policy's read-path volume: no pod on the node", async () => {
    await applyObjects([run("ws-peek", { claimName: DOCS_CLAIM })]);
    await expectRefused("ws-peek", "RefusedByPolicy",
      `spec.workspace.claimName: PersistentVolumeClaim '${DOCS_CLAIM}' backs the LeviathPolicy's spec.readPaths.volumes[0]; a workspace never mounts a policy volume's claim`);
  });

  it("may not be another Run's workspace: no pod on the node", async () => {
    await waitForRunPods(RUN, 3);
    await applyObjects([run("ws-second", { claimName: `${RUN}-workspace` })]);
    await expectRefused("ws-second", "WorkspaceInUse", `spec.workspace.claimName: PersistentVolumeClaim '${RUN}-workspace' is the workspace the operator made for Run '${RUN}'`);
  });
});
