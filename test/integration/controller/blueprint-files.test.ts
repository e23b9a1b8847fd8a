// An Agent's blueprint files (spec.blueprintFiles.configMap) against the real API server: the Run waits, naming
// the ConfigMap, until it exists; one over the bound keeps the Run from starting; once started the files are the
// copy in the Run's start snapshot, mounted read-only into the sidecar container only (not the agent container,
// not a sandbox pod), and a later edit of the Agent's ConfigMap does not change them. Only a ConfigMap its owner
// opted in (`leviath.dev/blueprint-files: "true"`) is read for an Agent (issue 41, finding 1): an Agent's author
// bound to the chart's edit role, who may not read the admin's `team-notes` or another Run's `<run>-policy`, cannot
// have the controller read either for them.
import { readFileSync } from "node:fs";
import { loadAllYaml, type V1ConfigMap, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computeSnapshotDataSha256 } from "../../../src/io/snapshot-digest.ts";
import { BLUEPRINT_FILES_MAX_BYTES } from "../../../src/sandbox/blueprint-files.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { bindChartEditRole, kubectlAs } from "./chart-edit-role.ts";
import { applyPolicy, conditionOf, createAgent, createRun, OURS, patchCustom, readCustom, startTestOperator, TEST_RUNTIME_IMAGE, waitForCustom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator | undefined;

const agentSpec = (configMap: string) => ({
  image: TEST_RUNTIME_IMAGE, sandbox: { kind: "container", image: "debian:bookworm-slim", network: false }, stages: [{ name: "main" }], blueprintFiles: { configMap },
});
const core = () => testCluster().core;
/** The Agent's author: the chart's edit role in this namespace, nothing else. */
const AUTHOR = "agent-author";
const OPT_IN = { "leviath.dev/blueprint-files": "true" };
const createFiles = (name: string, data: Record<string, string>, labels: Record<string, string> = OPT_IN) => core().createNamespacedConfigMap({ namespace, body: { metadata: { name, namespace, labels }, data } });
const resolvedFalse = (run: string, reason: string) =>
  waitForCustom("runs", namespace, run, (r) => conditionOf(r, "PolicyResolved")?.reason === reason, `${run} waiting with ${reason}`);

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("blueprint-files");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  await applyPolicy({});
  await bindChartEditRole(namespace, AUTHOR);
  op = await startTestOperator();
}, 120_000);

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

describe("spec.blueprintFiles", { timeout: 240_000 }, () => {
  it("keeps the Run from starting while the ConfigMap is missing, naming it, then pins and mounts it in the sidecar only", async () => {
    await createAgent(namespace, "bp", agentSpec("bp-files"));
    await createRun(namespace, "early", { agentRef: { name: "bp" } });
    const waiting = await resolvedFalse("early", "BlueprintFilesNotFound");
    expect(waiting.status?.phase).toBe("Pending");
    expect(conditionOf(waiting, "PolicyResolved")).toMatchObject({ status: "False", message: "Agent 'bp': spec.blueprintFiles.configMap 'bp-files' not found in the Agent's namespace; the Run waits until it exists" });
    expect((await core().listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.labels?.["leviath.dev/run"] === "early")).toEqual([]);

    await createFiles("bp-files", { "intro.md": "intro v1\n", "notes.txt": "notes\n" });
    const pinned = await waitForCustom("runs", namespace, "early", (r) => typeof r.status?.["snapshotSha256"] === "string", "the Run pinned once the ConfigMap exists");
    const snapshot = (await core().readNamespacedConfigMap({ name: "early-policy", namespace })).data!;
    expect(snapshot["blueprint.intro.md"]).toBe("intro v1\n");
    expect(snapshot["blueprint.notes.txt"]).toBe("notes\n");
    expect(pinned.status?.["snapshotSha256"]).toBe(computeSnapshotDataSha256(snapshot));

    const pods = await waitFor(async () => {
      const items = (await core().listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.labels?.["leviath.dev/run"] === "early");
      return items.length >= 2 ? items : undefined;
    }, { description: "the engine and sandbox pods" });
    const engine = pods.find((p) => p.metadata!.name === "early-engine")!;
    expect(engine.spec!.volumes!.find((v) => v.name === "blueprint-files")).toEqual({
      name: "blueprint-files",
      configMap: { name: "early-policy", defaultMode: 420, items: [{ key: "blueprint.intro.md", path: "intro.md" }, { key: "blueprint.notes.txt", path: "notes.txt" }] },
    });
    const sidecar = engine.spec!.initContainers!.find((c) => c.name === "sidecar")!;
    expect(sidecar.volumeMounts).toContainEqual({ name: "blueprint-files", mountPath: "/etc/leviath/blueprint", readOnly: true });
    expect(sidecar.args!.slice(sidecar.args!.indexOf("--blueprint-dir"), sidecar.args!.indexOf("--blueprint-dir") + 2)).toEqual(["--blueprint-dir", "/etc/leviath/blueprint"]);
    // Nothing else sees the files: not the agent container, not a sandbox pod (no volume of the snapshot's blueprint keys).
    const mountsOf = (pod: V1Pod) => [...(pod.spec!.containers ?? []), ...(pod.spec!.initContainers ?? [])].filter((c) => c.name !== "sidecar").flatMap((c) => c.volumeMounts ?? []);
    for (const pod of pods) {
      expect(mountsOf(pod).map((m) => m.name), pod.metadata!.name).not.toContain("blueprint-files");
      const blueprintKeys = (pod.spec!.volumes ?? []).flatMap((v) => v.configMap?.items ?? []).filter((i) => i.key.startsWith("blueprint."));
      if (pod.metadata!.name !== "early-engine") expect(blueprintKeys, pod.metadata!.name).toEqual([]);
    }
    const agentMounts = engine.spec!.containers.find((c) => c.name === "agent")!.volumeMounts!.map((m) => m.name);
    const agentVolumes = engine.spec!.volumes!.filter((v) => agentMounts.includes(v.name));
    expect(agentVolumes.flatMap((v) => v.configMap?.items ?? []).some((i) => i.key.startsWith("blueprint."))).toBe(false);
  });

  it("does not change a started Run when the Agent's ConfigMap is edited", async () => {
    const before = await readCustom("runs", namespace, "early");
    await core().replaceNamespacedConfigMap({ name: "bp-files", namespace, body: { metadata: { name: "bp-files", namespace, labels: OPT_IN }, data: { "intro.md": "intro v2, edited after start\n", "extra.md": "new\n" } } });
    await patchCustom("runs", namespace, "early", { metadata: { annotations: { "test/poke": "1" } } });
    // The poke makes the controller reconcile the Run again; give it a few passes to (wrongly) pick the edit up.
    await new Promise((r) => setTimeout(r, 3000));
    const snapshot = (await core().readNamespacedConfigMap({ name: "early-policy", namespace })).data!;
    expect(snapshot["blueprint.intro.md"]).toBe("intro v1\n");
    expect(snapshot["blueprint.extra.md"]).toBeUndefined();
    const after = await readCustom("runs", namespace, "early");
    expect(after.status?.["snapshotSha256"]).toBe(before.status?.["snapshotSha256"]);
    expect(after.status?.phase).not.toBe("Failed");
    const engine = await core().readNamespacedPod({ name: "early-engine", namespace });
    expect(engine.spec!.volumes!.find((v) => v.name === "blueprint-files")?.configMap?.items?.map((i) => i.path)).toEqual(["intro.md", "notes.txt"]);
    // A new Run of the same Agent pins the edited files.
    await createRun(namespace, "later", { agentRef: { name: "bp" } });
    await waitForCustom("runs", namespace, "later", (r) => typeof r.status?.["snapshotSha256"] === "string", "the later Run pinned");
    expect((await core().readNamespacedConfigMap({ name: "later-policy", namespace })).data!["blueprint.intro.md"]).toBe("intro v2, edited after start\n");
  });

  it("runs the example of docs/sidecar-api.md: its Agent pins the ConfigMap's files", async () => {
    const doc = readFileSync("docs/sidecar-api.md", "utf8");
    const block = /```yaml\n([\s\S]*?blueprintFiles[\s\S]*?)```/.exec(doc)![1]!.replace(/^ {2}/gm, "");
    const [cm, agent] = loadAllYaml(block.replaceAll("namespace: team-a", `namespace: ${namespace}`)) as [V1ConfigMap, { metadata: { name: string }; spec: Record<string, unknown> }];
    await core().createNamespacedConfigMap({ namespace, body: cm });
    await createAgent(namespace, agent.metadata.name, agent.spec);
    await createRun(namespace, "doc-example", { agentRef: { name: agent.metadata.name } });
    await waitForCustom("runs", namespace, "doc-example", (r) => typeof r.status?.["snapshotSha256"] === "string", "the example's Run pinned");
    expect((await core().readNamespacedConfigMap({ name: "doc-example-policy", namespace })).data!["blueprint.intro.md"]).toBe("You review pull requests for the team's style guide.\n");
  });

  it("refuses a ConfigMap over the bound: the Run does not start, and its condition names the Agent, the ConfigMap and the bound", async () => {
    await createFiles("big-files", { "a.md": "x".repeat(BLUEPRINT_FILES_MAX_BYTES / 2), "b.md": "y".repeat(BLUEPRINT_FILES_MAX_BYTES / 2) });
    await createAgent(namespace, "big", agentSpec("big-files"));
    await createRun(namespace, "too-big", { agentRef: { name: "big" } });
    const refused = await resolvedFalse("too-big", "BlueprintFilesInvalid");
    expect(refused.status?.phase).toBe("Pending");
    expect(conditionOf(refused, "PolicyResolved")?.message).toBe(`Agent 'big': spec.blueprintFiles.configMap 'big-files' holds ${BLUEPRINT_FILES_MAX_BYTES + 8} bytes; blueprint files may hold at most ${BLUEPRINT_FILES_MAX_BYTES}`);
    await expect(core().readNamespacedConfigMap({ name: "too-big-policy", namespace })).rejects.toThrow();
    expect((await core().listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.labels?.["leviath.dev/run"] === "too-big")).toEqual([]);
  });

  it("never reads a ConfigMap its owner did not opt in for an Agent's author who may not read it (the admin's notes, another Run's snapshot)", async () => {
    await createFiles("team-notes", { "notes.md": "the admin's notes\n" }, {});
    // The author may not read either ConfigMap themselves.
    for (const target of ["team-notes", "early-policy"]) {
      const denied = await kubectlAs(AUTHOR, ["get", "configmap", target, "-n", namespace, "-o", "json"]);
      expect(denied.exitCode, target).not.toBe(0);
      expect(denied.stderr, target).toContain(`User "${AUTHOR}" cannot get resource "configmaps"`);
    }
    for (const [agent, target] of [["steal-notes", "team-notes"], ["steal-snapshot", "early-policy"]] as const) {
      const manifests = [
        { apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: agent, namespace }, spec: agentSpec(target) },
        { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: `${agent}-run`, namespace }, spec: { agentRef: { name: agent } } },
      ];
      for (const m of manifests) {
        const created = await kubectlAs(AUTHOR, ["create", "-f", "-"], JSON.stringify(m));
        expect(created.exitCode, created.stderr).toBe(0);
      }
      const refused = await resolvedFalse(`${agent}-run`, "BlueprintFilesNotOptedIn");
      expect(refused.status?.phase).toBe("Pending");
      expect(conditionOf(refused, "PolicyResolved")?.message).toBe(
        `Agent '${agent}': spec.blueprintFiles.configMap '${target}' lacks the label leviath.dev/blueprint-files: "true" (only a ConfigMap its owner opted in is read for an Agent); the Run waits`);
      // Nothing of it was pinned: no snapshot, no digest, no pod, and the Run's status holds none of its text.
      await expect(core().readNamespacedConfigMap({ name: `${agent}-run-policy`, namespace })).rejects.toThrow();
      expect(refused.status?.["snapshotSha256"]).toBeUndefined();
      expect(JSON.stringify(refused.status)).not.toContain("admin's notes");
      expect((await core().listNamespacedPod({ namespace })).items.filter((p) => p.metadata?.labels?.["leviath.dev/run"] === `${agent}-run`)).toEqual([]);
    }
  });
});
