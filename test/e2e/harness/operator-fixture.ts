// What the e2e tests of the operator share: the chart installed with real helm and the locally built images,
// a workspace volume at a known host path for the tests that must see or plant its files (any other Run's claim is
// bound by the node's provisioner, test/e2e/harness/local-path.ts), the Agent shape most tests
// use (two stages, two sandboxes), applying objects, waiting for a Run's pods and phase, and reading what a user
// reads afterwards (the runtime's log, the audit ConfigMaps). Each test file keeps only what it checks.
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { helm, kubectl, REPO_ROOT, waitFor } from "../../integration/harness/index.ts";
import { getJson, imageValues } from "./kube-json.ts";
import { LOCAL_PATH_CLASS } from "./local-path.ts";
import type { NodeInfo } from "./provided-context.ts";
import { deleteMetricsReader } from "./metrics-access.ts";
import { readBuiltImages } from "./node-images.ts";

/** The sandbox namespace the chart creates. */
export const NS = "leviath-sandbox";
/** The operator's namespace. */
export const SYSTEM_NS = "leviath-system";
/** The Helm release every e2e test installs (one at a time per node). */
export const RELEASE = "leviath";

/** A status condition. */
export type Condition = { type: string; status: string; reason: string; message: string };
/** A Run's status, as far as the e2e tests read it. */
export type RunObject = {
  metadata?: { annotations?: Record<string, string> };
  status?: {
    phase?: string; taint?: { level?: string }; gateDecisions?: Record<string, number>; pendingApprovals?: { id: string; kind?: string; tool?: string; target?: string }[];
    sandboxes?: unknown[]; resume?: Record<string, unknown>; readPaths?: Record<string, unknown>;
    result?: { inline?: string; bytes?: number; sha256?: string; callId?: string }; agentExit?: { exitCode: number; reason?: string; message?: string };
    conditions?: Condition[];
  };
};
/** A pod list. */
export type PodList = { items: { metadata: { name: string; uid?: string; labels?: Record<string, string> }; status?: { phase?: string; podIP?: string } }[] };
/** One JSON line of the scripted runtime (images/runtime). */
export type RuntimeLine = { step: string; status: number; body: Record<string, unknown> };
/** One record of a Run's audit ConfigMaps. */
export type AuditLine = { leviath_audit: { run: string; file: string; record: Record<string, unknown> } };

/** The condition `type` of a Run. */
export const conditionOf = (run: RunObject, type: string): Condition | undefined => run.status?.conditions?.find((c) => c.type === type);

/** `kubectl apply` of objects (as YAML documents). */
export async function applyObjects(objects: readonly unknown[]): Promise<void> {
  await kubectl(["apply", "-f", "-"], { input: objects.map((o) => stringify(o)).join("---\n") });
}

/**
 * `helm install` of the chart with the node's images (`pullPolicy: Never`, one replica, no PDB) and `values` on
 * top (merged one level deep), then waits for the controller pod to run. `release`: the demo's is the quickstart's.
 */
export async function installOperator(node: NodeInfo, values: Record<string, unknown>, extraArgs: readonly string[] = [], release = RELEASE): Promise<void> {
  const operator = node.images["leviath-operator"];
  if (!operator) throw new Error("no leviath-operator image: run 'bash scripts/build-images'");
  const controller = { replicas: 1, podDisruptionBudget: { enabled: false }, ...(values["controller"] as Record<string, unknown> | undefined) };
  const merged = { ...values, image: { ...imageValues(operator), pullPolicy: "Never" }, controller };
  await helm(["install", release, join(REPO_ROOT, "charts/leviath-operator"), "-n", SYSTEM_NS, "--create-namespace", "-f", "-", ...extraArgs],
    { input: stringify(merged), timeoutMs: 180_000 });
  await waitFor(async () => {
    const pods = await getJson<PodList>(["get", "pods", "-n", SYSTEM_NS]);
    return pods.items.length > 0 && pods.items.every((p) => p.status?.phase === "Running");
  }, { timeoutMs: 180_000, intervalMs: 1000, description: "the controller pod Running" });
  await waitForWebhook();
}

/**
 * Waits until the operator's webhook (on by default) admits a valid Agent: a replica is ready behind its Service and
 * serves the certificate whose CA it patched into the configuration. Until then it refuses every Agent and Run.
 */
export async function waitForWebhook(): Promise<void> {
  const probe = stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "webhook-probe", namespace: NS }, spec: {} });
  await waitFor(async () => (await kubectl(["create", "--dry-run=server", "-f", "-"], { input: probe, allowFailure: true })).exitCode === 0 ? true : undefined,
    { timeoutMs: 120_000, intervalMs: 1000, description: "the operator's webhook to admit a valid Agent" });
}

/** Deletes the Runs (not waiting), uninstalls the chart and removes the workspaces: each test file's afterAll. */
export async function cleanUp(runs: readonly string[], workspaces?: Workspaces): Promise<void> {
  if (runs.length > 0) await kubectl(["delete", "run", ...runs, "-n", NS, "--ignore-not-found", "--wait=false"], { allowFailure: true });
  await helm(["uninstall", RELEASE, "-n", SYSTEM_NS, "--wait", "--timeout", "60s"], { allowFailure: true, timeoutMs: 90_000 });
  await deleteMetricsReader(RELEASE, SYSTEM_NS);
  workspaces?.remove();
  for (const run of runs) await kubectl(["delete", "pv", `${run}-workspace`, "--ignore-not-found", "--wait=false"], { allowFailure: true });
}

/**
 * Host directories behind the Runs' workspace volumes: only for a test that must see or plant files in the workspace
 * at a known host path (the provisioner picks its own directory, made once the pod is scheduled); any other Run's
 * claim is bound by the node's provisioner.
 */
export interface Workspaces {
  /** The directory every workspace volume is backed by (writable by the sandbox user). */
  readonly dir: string;
  /**
   * A hostPath PersistentVolume pre-bound to `<run>-workspace`, the claim the operator makes. Of the claim's class:
   * the default one, local-path, on a node with the provisioner (`storageClassName: ""` on a cluster with no default).
   */
  volume(run: string): Record<string, unknown>;
  remove(): void;
}

/** A fresh workspace directory on the host; `storageClassName`: the class the Runs' claims get (see Workspaces.volume). */
export function createWorkspaces(prefix: string, storageClassName: string = LOCAL_PATH_CLASS): Workspaces {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777);
  return {
    dir,
    volume: (run) => ({
      apiVersion: "v1", kind: "PersistentVolume", metadata: { name: `${run}-workspace` },
      spec: {
        capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce"], storageClassName,
        hostPath: { path: dir, type: "Directory" },
        claimRef: { namespace: NS, name: `${run}-workspace` },
      },
    }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** What differs between the tests' two-stage Agents (`survey`, `network: false`, then the output stage `digest`). */
export interface TwoStageAgent {
  readonly name: string;
  readonly sandbox: string;
  readonly description: string;
  readonly toolPermissions: Record<string, string>;
  readonly surveyTools: readonly string[];
  readonly digestTools: readonly string[];
  readonly readPaths?: readonly string[];
  /** The digest stage's own sandbox has the network (a second sandbox pod); default true. */
  readonly digestNetwork?: boolean;
}

/** The Agent: `survey` in a `network: false` sandbox leading to `digest`, which submits the output. */
export function buildTwoStageAgent(a: TwoStageAgent): Record<string, unknown> {
  return {
    apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: a.name, namespace: NS },
    spec: {
      agent: { name: a.name, version: "1.0.0", description: a.description, entryStage: "survey" },
      sandbox: { kind: "container", image: a.sandbox, network: false, onUnavailable: "error" },
      ...(a.readPaths ? { readPaths: { allow: [...a.readPaths] } } : {}),
      toolPermissions: a.toolPermissions,
      stages: [
        { name: "survey", availableTools: [...a.surveyTools], runtime: { mode: "autonomous", transitions: { digest: { hint: "done" } } } },
        { name: "digest", sandbox: { kind: "container", image: a.sandbox, network: a.digestNetwork ?? true }, availableTools: [...a.digestTools], runtime: { mode: "output", transitions: {} } },
      ],
    },
  };
}

/** Waits until the Run has `count` pods (engine + sandboxes), all Running; returns them. */
export async function waitForRunPods(run: string, count: number, timeoutMs = 180_000): Promise<PodList["items"]> {
  return waitFor(async () => {
    const list = await getJson<PodList>(["get", "pods", "-n", NS, "-l", `leviath.dev/run=${run}`]);
    return list.items.length === count && list.items.every((p) => p.status?.phase === "Running") ? list.items : undefined;
  }, { timeoutMs, intervalMs: 1000, description: `the ${count} pods of ${run} Running` });
}

/** The Run. */
export function getRun(run: string): Promise<RunObject> {
  return getJson<RunObject>(["get", "run", run, "-n", NS]);
}

/** Waits until the Run is in one of `phases`; returns it. */
export async function waitForPhase(run: string, phases: readonly string[], timeoutMs = 120_000): Promise<RunObject> {
  return waitFor(async () => {
    const r = await getRun(run);
    return phases.includes(r.status?.phase ?? "") ? r : undefined;
  }, { timeoutMs, intervalMs: 500, description: `${run} ${phases.join(" or ")}` });
}

/** The agent container's log (all of it, for a transcript); `pod`: an engine pod not named after the Run (adopted). */
export async function agentLog(run: string, pod = `${run}-engine`): Promise<string> {
  return (await kubectl(["logs", "-n", NS, pod, "-c", "agent"], { allowFailure: true })).stdout;
}

/** The scripted runtime's JSON lines. */
export async function runtimeLines(run: string, pod?: string): Promise<RuntimeLine[]> {
  return (await agentLog(run, pod)).split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as RuntimeLine);
}

/** The Run's audit as docs/operations.md reads it: its audit ConfigMaps' `audit.jsonl`, in order, as text. */
export async function readAuditText(run: string): Promise<string> {
  return (await kubectl(["get", "configmap", "-n", NS, "-l", `leviath.dev/run=${run},leviath.dev/component=audit`,
    "-o", "jsonpath={range .items[*]}{.data.audit\\.jsonl}{end}"])).stdout;
}

/** The audit lines of {@link readAuditText}, parsed. */
export function parseAudit(text: string): AuditLine[] {
  return text.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as AuditLine);
}

/** The `leviath_audit` lines the sidecar printed on its stdout. */
export async function sidecarAuditLines(run: string): Promise<string[]> {
  const logs = (await kubectl(["logs", "-n", NS, `${run}-engine`, "-c", "sidecar"], { allowFailure: true })).stdout;
  return logs.split("\n").filter((l) => l.startsWith('{"leviath_audit"'));
}

/** An Approval answering `approvalId` of `run`, as `kubectl create` takes it. */
export function buildApproval(name: string, run: string, approvalId: string, reason: string, decision = "allowOnce"): Record<string, unknown> {
  return { apiVersion: "leviath.dev/v1alpha1", kind: "Approval", metadata: { name, namespace: NS }, spec: { runRef: { name: run }, approvalId, decision, reason } };
}

/**
 * Gives an image the node already has a second name in its containerd (`ctr images tag`): no registry is reachable
 * here, so an image a manifest names by its public reference (with `IfNotPresent`, the default for a tag other than
 * `latest`) is one built on this machine under that name.
 */
export async function tagNodeImage(node: NodeInfo, source: string, target: string): Promise<void> {
  await runCtr(node, ["images", "tag", "--force", source, target]);
}

/**
 * Imports an image scripts/build-images made that the node did not import at its start (ON_DEMAND_IMAGES) into the
 * node's containerd, and returns its reference.
 */
export async function importNodeImage(node: NodeInfo, name: string): Promise<string> {
  const image = readBuiltImages()[name];
  if (!image) throw new Error(`no ${name} image: run 'bash scripts/build-images' (as root)`);
  const started = performance.now();
  await runCtr(node, ["images", "import", image.archive], 600_000);
  process.stderr.write(`[node] imported ${name} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
  return image.ref;
}

/** `ctr` on the node's containerd, namespace k8s.io (the kubelet's). */
async function runCtr(node: NodeInfo, args: readonly string[], timeoutMs = 60_000): Promise<void> {
  const ctr = join(process.env.LEVIATH_CONTAINERD_DIR || "/usr/bin", "ctr");
  await promisify(execFile)(ctr, ["--address", node.containerdSocket, "--namespace", "k8s.io", ...args], { timeout: timeoutMs });
}

/**
 * Ends container `container` of pod `pod` with SIGKILL through the node's containerd, as the kernel's OOM killer
 * would: the task of exactly that container id (from the pod's status), nothing else.
 */
export async function killContainer(node: NodeInfo, pod: string, container: string): Promise<void> {
  type Status = { name: string; containerID?: string };
  const p = await getJson<{ status?: { initContainerStatuses?: Status[]; containerStatuses?: Status[] } }>(["get", "pod", pod, "-n", NS]);
  const found = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])].find((c) => c.name === container);
  const id = found?.containerID?.replace(/^containerd:\/\//, "");
  if (!id) throw new Error(`pod ${pod} has no running container '${container}'`);
  await runCtr(node, ["tasks", "kill", "--signal", "SIGKILL", id]);
}
