// A workspace claim planted under a Run's own name, on the real node (issue 41, finding 3). While a Run waits
// unpinned (its Agent missing), someone who may create claims in the namespace creates `<run>-workspace` as the
// operator would (its labels, a controller owner reference naming the Run's uid), bound to a volume holding their
// own file. With the chart installed, the `<release>-authorship` admission policy refuses that claim; where the policy
// is not in force (its binding removed here), the claim is created, and once the Agent appears the Run proceeds
// without ever mounting it: the operator deletes it at its uid and makes the Run's own, whose uid it records in
// `status.workspaceClaimUid`. Checked from the node's side: every pod of the Run names that claim, the claim is
// bound to the operator's volume, the attacker's file is seen by no container, and what a sandbox command writes
// lands in the operator's volume on the host, not in the attacker's.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildWorkspaceClaim } from "../../src/sandbox/run-objects.ts";
import { kubectl, waitFor } from "../integration/harness/index.ts";
import { getJson } from "./harness/kube-json.ts";
import {
  applyObjects, buildTwoStageAgent, cleanUp, conditionOf, createWorkspaces, getRun, installOperator, NS, waitForRunPods, type RunObject, type Workspaces,
} from "./harness/operator-fixture.ts";
import { execInPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "wsp-agent";
const RUN = "wsp-run";
const CLAIM = `${RUN}-workspace`;
const PLANTER = "claim-planter";
const PLANTED_PV = "wsp-planted-pv";
const SECRET_FILE = "planted.txt";

type Claim = { metadata: { uid: string; deletionTimestamp?: string }; spec: { volumeName?: string }; status?: { phase?: string } };
type PodView = { metadata: { name: string }; spec: { volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[] } };
type Binding = { metadata: Record<string, unknown> & { name: string } };

/** `kubectl` as the planter, who may create and get claims in the namespace and nothing else. */
const asPlanter = (args: string[], input?: string) => kubectl([`--as=${PLANTER}`, ...args], { allowFailure: true, ...(input ? { input } : {}) });

/** The claim the planter creates: the operator's for this Run (labels, owner), bound to the planter's own volume. */
function plantedClaim(runUid: string): string {
  const claim = buildWorkspaceClaim({ name: RUN, namespace: NS, uid: runUid }, AGENT, { size: "1Gi", accessMode: "ReadWriteOnce" });
  return JSON.stringify({
    ...claim,
    // blockOwnerDeletion would need delete on the Run, which the planter does not have.
    metadata: { ...claim.metadata, ownerReferences: claim.metadata.ownerReferences?.map((r) => ({ ...r, blockOwnerDeletion: false })) },
    spec: { ...(claim as { spec?: Record<string, unknown> }).spec, storageClassName: "", volumeName: PLANTED_PV },
  });
}

describe("a workspace claim planted while the Run waited unpinned, on the real node", () => {
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  let workspaces: Workspaces | undefined;
  let planted: Workspaces | undefined;
  let binding: Binding | undefined;

  /** Puts the chart's authorship binding back as it was (idempotent). */
  const restoreBinding = async () => {
    if (binding === undefined) return;
    const { name, labels, annotations } = binding.metadata;
    await kubectl(["apply", "-f", "-"], { input: stringify({ ...binding, metadata: { name, labels, annotations } }) });
  };

  beforeAll(async () => {
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    workspaces = createWorkspaces("leviath-e2e-wsp-");
    // The planted claim names no class (""), as its volume must: a volume binds only a claim of its own class.
    planted = createWorkspaces("leviath-e2e-wsp-planted-", "");
    writeFileSync(join(planted.dir, SECRET_FILE), "the planter's file\n", { mode: 0o644 });
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: { spec: { sandbox: { kind: "container", image: sandbox, onUnavailable: "error" }, toolPermissions: { shell: "allow", submit_output: "allow" } } },
    });
    await kubectl(["create", "role", PLANTER, "-n", NS, "--verb=create,get", "--resource=persistentvolumeclaims"]);
    await kubectl(["create", "rolebinding", PLANTER, "-n", NS, `--role=${PLANTER}`, `--user=${PLANTER}`]);
    const plantedVolume = planted.volume("unused") as { spec: Record<string, unknown> };
    const { claimRef: _unbound, ...plantedSpec } = plantedVolume.spec;
    await applyObjects([
      workspaces.volume(RUN),
      { apiVersion: "v1", kind: "PersistentVolume", metadata: { name: PLANTED_PV }, spec: plantedSpec },
      // Its Agent does not exist yet: the Run waits unpinned.
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace: NS },
        spec: { agentRef: { name: AGENT }, task: "e2e", mode: "interactive", runtime: { e2e: { holdTool: "send_email" } } },
      },
    ]);
  });

  afterAll(async () => {
    await restoreBinding().catch(() => undefined);
    await kubectl(["delete", "agent", AGENT, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    await kubectl(["delete", "rolebinding,role", PLANTER, "-n", NS, "--ignore-not-found"], { allowFailure: true });
    await cleanUp([RUN], workspaces);
    await kubectl(["delete", "pv", PLANTED_PV, "--ignore-not-found", "--wait=false"], { allowFailure: true });
    planted?.remove();
  });

  it("is refused by the authorship policy, and where that is not in force, never mounted: the Run's pods work in the operator's claim", async () => {
    const waiting = await waitFor(async () => {
      const r = await getRun(RUN);
      return conditionOf(r, "PolicyResolved")?.reason === "AgentNotFound" ? r : undefined;
    }, { timeoutMs: 60_000, intervalMs: 500, description: `${RUN} waiting for its Agent` }) as RunObject & { metadata: { uid: string } };
    const runUid = waiting.metadata.uid;
    expect(waiting.status?.phase).toBe("Pending");

    // With the chart's admission policy in force, the claim is refused at the API server.
    const refused = await asPlanter(["create", "-f", "-"], plantedClaim(runUid));
    expect(refused.exitCode, refused.stdout).not.toBe(0);
    expect(refused.stderr).toContain(`may not create PersistentVolumeClaim ${NS}/${CLAIM}`);

    // Where it is not (its binding removed), the claim is created and bound to the planter's volume.
    const bindings = await getJson<{ items: Binding[] }>(["get", "validatingadmissionpolicybindings", "-l", "app.kubernetes.io/instance=leviath"]);
    binding = bindings.items.find((b) => b.metadata.name.endsWith("-authorship"));
    expect(binding, "the chart's authorship binding").toBeDefined();
    await kubectl(["delete", "validatingadmissionpolicybinding", binding!.metadata.name]);
    const created = await waitFor(async () => {
      const r = await asPlanter(["create", "-f", "-", "-o", "json"], plantedClaim(runUid));
      return r.exitCode === 0 ? JSON.parse(r.stdout) as Claim : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "the planted claim created once the binding is gone" });
    await restoreBinding();
    const plantedUid = created.metadata.uid;
    await waitFor(async () => ((await getJson<Claim>(["get", "pvc", CLAIM, "-n", NS])).status?.phase === "Bound" ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 500, description: "the planted claim bound to the planter's volume" });

    // The Agent appears: the Run is pinned and proceeds.
    await applyObjects([buildTwoStageAgent({
      name: AGENT, sandbox, description: "e2e planted workspace", toolPermissions: { shell: "allow", submit_output: "allow", send_email: "ask" },
      surveyTools: ["read_file", "shell"], digestTools: ["shell", "send_email", "submit_output"],
    })]);
    const pods = await waitForRunPods(RUN, 3);
    const run = await getRun(RUN) as RunObject & { status?: { workspaceClaimUid?: string } };
    const recorded = run.status?.workspaceClaimUid;
    expect(recorded).toBeDefined();
    expect(recorded).not.toBe(plantedUid);
    const claim = await getJson<Claim>(["get", "pvc", CLAIM, "-n", NS]);
    expect(claim.metadata.uid).toBe(recorded);
    expect(claim.spec.volumeName).toBe(CLAIM);

    for (const { metadata: { name } } of pods) {
      const pod = await getJson<PodView>(["get", "pod", name, "-n", NS]);
      expect(pod.spec.volumes?.filter((v) => v.persistentVolumeClaim).map((v) => v.persistentVolumeClaim!.claimName), name).toEqual([CLAIM]);
    }
    // From inside: no container sees the planter's file, and what a command writes lands in the operator's volume.
    for (const { metadata: { name } } of pods.filter((p) => p.metadata.name.startsWith(`${RUN}-sbx-`))) {
      const r = await execInPod(NS, name, `ls -A /workspace; test ! -e /workspace/${SECRET_FILE} && echo absent; echo from-${name} > /workspace/${name}.txt`);
      expect(r.stdout.trim().split("\n").at(-1), r.stderr).toBe("absent");
      expect(readFileSync(join(workspaces!.dir, `${name}.txt`), "utf8")).toBe(`from-${name}\n`);
      expect(existsSync(join(planted!.dir, `${name}.txt`))).toBe(false);
    }
    const sidecar = await execInPod(NS, `${RUN}-engine`, `test ! -e /workspace/${SECRET_FILE} && echo absent`, "sidecar");
    expect(sidecar.stdout.trim(), sidecar.stderr).toBe("absent");
    expect(readFileSync(join(planted!.dir, SECRET_FILE), "utf8")).toBe("the planter's file\n");
  });
});
