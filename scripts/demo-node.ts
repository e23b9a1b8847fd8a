// scripts/demo as root: a real node beside the control plane (containerd, the kubelet, kube-scheduler; the e2e
// harness's), a real storage provisioner on it (local-path-provisioner, built from its Go module: any Run's claim
// binds), the chart installed with real helm and the images built here, the stand-in model running in the cluster
// (`leviath model-server` from the operator's image: a script a user edits, and an echo) with its credential
// Secrets ready, and examples/ run to `Succeeded` by the reference runtime; then an Agent of your own
// (examples/try/) against the echo. What the user sees: one progress line per setup step (the build output goes to
// a log it names), the pods run, a shell call waiting for a person and answered with `kubectl leviath approve`, a
// granted read, a refused read, the taint gate holding the result until a person lets it leave, then the result and
// the audit. It stays up for more (Ctrl-C stops it): the PATH and KUBECONFIG to use, how to load a client's image.
import { execFileSync, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { REPO_ROOT, startControlPlane, type ControlPlane } from "../test/integration/harness/control-plane.ts";
import { createTestCluster, useTestCluster } from "../test/integration/harness/test-cluster.ts";
import { imageValues } from "../test/e2e/harness/kube-json.ts";
import { installLocalPath, LOCAL_PATH_CLASS } from "../test/e2e/harness/local-path.ts";
import { createMetricsReader, scrapeController } from "../test/e2e/harness/metrics-access.ts";
import { buildModelSecret, deployModelServer, ECHO_PORT, MODEL_NAMESPACE, SCRIPT_PORT } from "../test/e2e/harness/model-server-deploy.ts";
import { startNode, type Node } from "../test/e2e/harness/node.ts";
import { installOperator, NS, SYSTEM_NS, tagNodeImage, type PodList, type RunObject } from "../test/e2e/harness/operator-fixture.ts";

const RUN = "digest-docs";
/** The quickstart's release name, so the Deployment, Lease and Secrets docs/operations.md and metrics.md name are the demo's. */
const RELEASE = "leviath-operator";
/** examples/policy.yaml's sandbox floor: no registry is reachable here, so Debian is built here under that name. */
const EXAMPLE_SANDBOX_IMAGE = "docker.io/library/debian:bookworm-slim";
const NOTES = "/data/team-notes/2025-06-02-standup.md";
/** Outside what the Agent declares (it exists in the sidecar): the sidecar refuses it. */
const OUTSIDE = "/etc/passwd";
const DIGEST = "# Digest\n- The docs site moves to the new theme this week.\n- The release checklist lives in docs/release.md.\n";
/** The Run of your own Agent (examples/try/). */
const TRY_RUN = "hello-1";
const CACHE = process.env.LEVIATH_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "leviath");
/** Where the setup's build output goes (the screen shows one line a step). */
export const SETUP_LOG = join(CACHE, "demo-setup.log");
/** What scripts/demo-load-image reads to reach the running demo's node. */
export const DEMO_ENV = join(CACHE, "demo.env");

/**
 * What a fresh machine lacks, in order, with what the first run costs on 2 cores (measured here; later runs skip
 * each step in well under a second).
 */
const SETUP: readonly { script: string; args?: readonly string[]; what: string; firstRun: string }[] = [
  { script: "node-packages", what: "containerd, runc, CNI plugins, buildah and busybox (Debian packages)", firstRun: "under a minute" },
  { script: "control-plane-bin", what: "etcd, kube-apiserver, kube-controller-manager, kubectl and helm, built from their Go modules", firstRun: "25 to 60 minutes on 2 cores" },
  { script: "node-bin", what: "the kubelet and kube-scheduler, built from their Go module", firstRun: "1 to 7 minutes" },
  { script: "build-images", args: ["demo"], what: "the operator, runtime, sandbox and storage provisioner images, built with buildah", firstRun: "about 5 minutes" },
];

/**
 * The model's replies, in order, as `leviath model-server --script` reads them (ConfigMap leviath-model/model-script):
 * one call per turn, as a model hijacked by nothing would make them; `repeat`, so each Run of examples/run.yaml gets
 * the same story.
 */
export const DEMO_MODEL_SCRIPT = stringify({
  steps: [
    { text: "Listing the workspace first.", calls: [{ name: "shell", args: { command: "ls -la" } }] },
    { calls: [{ name: "read_file", args: { path: NOTES } }] },
    { text: "Who else uses this machine?", calls: [{ name: "read_file", args: { path: OUTSIDE } }] },
    { text: "Enough read.", calls: [{ name: "next_stage", args: { stage: "digest", reason: "notes and docs read" } }] },
    { calls: [{ name: "submit_output", args: { output: DIGEST } }] },
  ],
  repeat: true,
});

/** The answers the demo gives, as a person would with `kubectl leviath approve`, by the tool the prompt is for. */
const ANSWERS: Record<string, string> = { shell: "a listing of the workspace is fine", submit_output: "the digest may leave" };

interface Parts {
  cp?: ControlPlane;
  node?: Node;
}

const say = (line: string) => process.stdout.write(`\n==> ${line}\n`);
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** One progress line: `--- what ...` now, its time (or `failed`) when `work` ends; the details go to `log`. */
async function step<T>(what: string, work: () => Promise<T> | T): Promise<T> {
  const started = performance.now();
  process.stdout.write(`--- ${what} ...`);
  try {
    const value = await work();
    process.stdout.write(` ${seconds(started)}\n`);
    return value;
  } catch (err) {
    process.stdout.write(` failed after ${seconds(started)} (the details: ${SETUP_LOG})\n`);
    throw err;
  }
}

/** Appends to the setup log. */
const log = (line: string) => writeFileSync(SETUP_LOG, `${line}\n`, { flag: "a" });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the demo with a node; resolves to the exit status (0 once the Run succeeded). */
export async function runNodeDemo(opts: { once: boolean }): Promise<number> {
  const parts: Parts = {};
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= tearDown(parts));
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void stop().then(() => process.exit(0)));
  try {
    await prepareMachine();
    const kubectl = await startCluster(parts);
    writeDemoEnv(parts, kubectl);
    const status = await runExample(kubectl);
    if (!opts.once) await waitForCtrlC(parts.cp!);
    return status;
  } finally {
    await stop();
  }
}

async function prepareMachine(): Promise<void> {
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(SETUP_LOG, `scripts/demo ${new Date().toISOString()}\n`);
  say(`preparing this machine (each step is skipped when already done; build output: ${SETUP_LOG})`);
  for (const s of SETUP) {
    await step(`scripts/${[s.script, ...(s.args ?? [])].join(" ")}: ${s.what} (the first time: ${s.firstRun})`, () => {
      const fd = openSync(SETUP_LOG, "a");
      try {
        execFileSync("bash", [join(REPO_ROOT, "scripts", s.script), ...(s.args ?? [])], { stdio: ["ignore", fd, fd] });
      } finally {
        closeSync(fd);
      }
    });
  }
}

/** A kubectl that shows the command and its output, as the user would type it. */
interface Kubectl {
  bin: string;
  /** The PATH the demo runs kubectl, helm and kubectl-leviath with. */
  path: string;
  show(args: readonly string[], opts?: { input?: string; allowFailure?: boolean }): string;
  quiet(args: readonly string[]): string;
}

async function startCluster(parts: Parts): Promise<Kubectl> {
  say("starting a control plane and a node on this machine");
  const cp = parts.cp = await step("a control plane: etcd, kube-apiserver, kube-controller-manager", () => startControlPlane({ log }));
  process.stdout.write(`    kubeconfig ${cp.kubeconfigPath}\n`);
  // Only the images the demo runs (every image the machine built would add a minute of import).
  const node = parts.node = await step("a node: containerd, kube-scheduler, the kubelet, the images imported", () =>
    startNode(cp, { networkPolicy: false, startTimeoutMs: 600_000, log, images: ["leviath-operator", "leviath-agent", "leviath-runtime", "leviath-local-path"] }));
  process.stdout.write(`    node ${node.name}, logs in ${node.dataDir}\n`);
  useTestCluster(createTestCluster(cp.kubeconfigPath, cp.binDir));
  const kubectl = makeKubectl(cp);
  process.stdout.write(`    kubectl and helm: ${cp.binDir} (the demo puts them first on PATH, with bin/ for kubectl leviath: PATH=${kubectl.path})\n`);
  const agent = node.images["leviath-agent"];
  const debian = node.images["leviath-runtime"];
  const operator = node.images["leviath-operator"];
  const provisioner = node.images["leviath-local-path"];
  if (!agent || !debian || !operator || !provisioner) throw new Error("scripts/build-images demo made no leviath-agent, leviath-runtime, leviath-operator or leviath-local-path image");
  await tagNodeImage(node, debian, EXAMPLE_SANDBOX_IMAGE);
  await step(`a storage provisioner: local-path-provisioner, StorageClass ${LOCAL_PATH_CLASS} (the default), volumes under ${join(node.dataDir, "local-path")}`, () =>
    installLocalPath({ image: provisioner, helperImage: node.images.sandbox!, hostDir: join(node.dataDir, "local-path"), isDefault: true }));

  say("installing the operator with helm, its policy from examples/policy.yaml (as docs/quickstart.md does)");
  process.stdout.write(`$ helm install ${RELEASE} charts/leviath-operator -n leviath-system --create-namespace --set-file policy.document=examples/policy.yaml\n`);
  await step("the operator (helm install, then the controller pod Running and its webhook serving)", () =>
    installOperator(node, { agent: { image: imageValues(agent) } }, ["--set-file", `policy.document=${join(REPO_ROOT, "examples/policy.yaml")}`], RELEASE));
  kubectl.show(["get", "pods", "-n", "leviath-system"]);

  say(`the stand-in model, in the cluster: leviath model-server from the operator's image (namespace ${MODEL_NAMESPACE})`);
  await step(`model-server: the script of ConfigMap ${MODEL_NAMESPACE}/model-script on ${node.network.gateway}:${SCRIPT_PORT}, the echo on :${ECHO_PORT}`, () =>
    deployModelServer({ image: operator, nodeAddress: node.network.gateway, script: DEMO_MODEL_SCRIPT }));
  kubectl.show(["get", "deployment,service,configmap", "-n", MODEL_NAMESPACE, "-l", "app.kubernetes.io/part-of=leviath-demo"]);
  process.stdout.write("# the credential Secrets for it, as docs/quickstart.md makes them for a real provider (any key is taken):\n"
    + "#   model-provider (examples/run.yaml's): the script; echo-model: the echo\n");
  kubectl.show(["apply", "-f", "-"], { input: [buildModelSecret("model-provider", NS, node.network.gateway, SCRIPT_PORT), buildModelSecret("echo-model", NS, node.network.gateway, ECHO_PORT)].map((o) => stringify(o)).join("---\n") });
  return kubectl;
}

function makeKubectl(cp: ControlPlane): Kubectl {
  const bin = join(cp.binDir, "kubectl");
  // `kubectl leviath` is bin/kubectl-leviath, found on PATH as any kubectl plugin.
  const path = `${join(REPO_ROOT, "bin")}:${cp.binDir}:${process.env.PATH ?? ""}`;
  const env = { ...process.env, KUBECONFIG: cp.kubeconfigPath, PATH: path };
  const run = (args: readonly string[], input?: string) => spawnSync(bin, [...args], { encoding: "utf8", cwd: REPO_ROOT, env, input });
  return {
    bin,
    path,
    show(args, o = {}) {
      process.stdout.write(`$ kubectl ${args.join(" ")}\n`);
      const r = run(args, o.input);
      process.stdout.write(r.stdout + r.stderr);
      if (r.status !== 0 && !o.allowFailure) throw new Error(`kubectl ${args.join(" ")} exited ${r.status}`);
      return r.stdout;
    },
    quiet(args) {
      const r = run(args);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
      return r.stdout;
    },
  };
}

async function runExample(kubectl: Kubectl): Promise<number> {
  process.stdout.write(`\nThe model is a stand-in: leviath model-server in the cluster, speaking Anthropic's Messages API (and OpenAI's), replying\n`
    + "from its script (a shell listing, a granted read, a read outside what the Agent declares, the next stage, the digest).\n");

  say("the team notes, the Agent and the Run from examples/");
  kubectl.show(["apply", "-f", "examples/team-notes.yaml", "-f", "examples/agent.yaml", "-f", "examples/run.yaml"]);
  await answerPrompts(kubectl, 2);

  say("waiting for the Run to finish");
  kubectl.show(["leviath", "wait", RUN, "-n", NS, "--timeout", "5m"], { allowFailure: true });
  kubectl.show(["get", "run", RUN, "-n", NS]);
  process.stdout.write(`# its workspace claim named no storage class: the default, ${LOCAL_PATH_CLASS}, made its volume\n`);
  kubectl.show(["get", "pvc", `${RUN}-workspace`, "-n", NS]);
  kubectl.show(["leviath", "result", RUN, "-n", NS], { allowFailure: true });
  say("the audit: every call, who decided it and why");
  kubectl.show(["leviath", "audit", RUN, "-n", NS]);
  const phase = (JSON.parse(kubectl.quiet(["get", "run", RUN, "-n", NS, "-o", "json"])) as RunObject).status?.phase;
  process.stdout.write(`\nThe Run ended ${phase}.\n`);

  say("your own Agent, as docs/quickstart.md \"Try your own Agent\" writes it: examples/try/, against the echo");
  kubectl.show(["apply", "-f", "examples/try/"]);
  kubectl.show(["leviath", "wait", TRY_RUN, "-n", NS, "--timeout", "5m"], { allowFailure: true });
  kubectl.show(["logs", `${TRY_RUN}-engine`, "-n", NS, "-c", "agent"], { allowFailure: true });
  const tryPhase = (JSON.parse(kubectl.quiet(["get", "run", TRY_RUN, "-n", NS, "-o", "json"])) as RunObject).status?.phase;
  process.stdout.write(`\nYour Run ended ${tryPhase}.\n`);
  await showReconcileErrors(kubectl);
  return phase === "Succeeded" && tryPhase === "Succeeded" ? 0 : 1;
}

/**
 * What docs/operations.md's troubleshooting reads of the controller, after the Runs: the lease's holder, the error
 * lines of its log, and its reconcile errors per controller, none on a healthy cluster (the chart's
 * LeviathReconcileErrors alert fires on any). The metrics are scraped as Prometheus does with the chart's defaults
 * (HTTPS, verified, a token bound to the metrics-reader role), from the pod's address on this node rather than
 * through operations.md's port-forward.
 */
async function showReconcileErrors(kubectl: Kubectl): Promise<void> {
  say("the controller after the Runs, as docs/operations.md's troubleshooting reads it: no error, none on a healthy cluster");
  kubectl.show(["get", "lease", RELEASE, "--namespace", SYSTEM_NS, "-o", "jsonpath={.spec.holderIdentity}"]);
  process.stdout.write(`\n$ kubectl --namespace ${SYSTEM_NS} logs deployment/${RELEASE} --since=15m | grep '"level":"error"'\n`);
  const logLines = kubectl.quiet(["--namespace", SYSTEM_NS, "logs", `deployment/${RELEASE}`, "--since=15m"]).split("\n");
  const errorLines = logLines.filter((l) => l.includes('"level":"error"'));
  process.stdout.write(`${errorLines.map((l) => `${l}\n`).join("")}(${errorLines.length} error lines)\n`);
  const pods = JSON.parse(kubectl.quiet(["get", "pods", "-n", SYSTEM_NS, "-l", "app.kubernetes.io/name=leviath-operator", "-o", "json"])) as PodList;
  const podIp = pods.items.find((p) => p.status?.phase === "Running")?.status?.podIP;
  if (!podIp) throw new Error(`no running controller pod in ${SYSTEM_NS}`);
  const scraped = await scrapeController(RELEASE, SYSTEM_NS, podIp, await createMetricsReader(RELEASE, SYSTEM_NS));
  if (scraped.status !== 200) throw new Error(`the controller's /metrics answered HTTP ${scraped.status}: ${scraped.body.slice(0, 200)}`);
  process.stdout.write(`# https://${podIp}:8080/metrics | grep '^controller_runtime_reconcile_errors_total'\n`);
  const counters = scraped.body.split("\n").filter((l) => l.startsWith("controller_runtime_reconcile_errors_total"));
  process.stdout.write(`${counters.join("\n")}\n`);
  // A transient error (a conflict, an unreachable server) is counted too but logged as a warning: show every failed
  // reconcile when any was counted, so the count is never without its cause.
  if (counters.some((l) => !l.endsWith(" 0"))) {
    const failed = logLines.filter((l) => l.includes('"msg":"reconcile failed"'));
    process.stdout.write(`# every 'reconcile failed' line of the log, whatever its level:\n${failed.map((l) => `${l}\n`).join("")}`);
  }
}

/** Answers the Run's prompts as they come (each once), with the plugin, until `count` were answered. */
async function answerPrompts(kubectl: Kubectl, count: number): Promise<void> {
  const answered = new Set<string>();
  let lastPhase = "";
  const deadline = Date.now() + 600_000;
  while (answered.size < count) {
    if (Date.now() > deadline) throw new Error(`no prompt to answer within 10 minutes (answered ${answered.size} of ${count})`);
    const run = JSON.parse(kubectl.quiet(["get", "run", RUN, "-n", NS, "-o", "json"])) as RunObject;
    const phase = run.status?.phase ?? "";
    if (phase !== lastPhase) {
      process.stdout.write(`    Run ${RUN}: ${phase || "(no phase yet)"}\n`);
      lastPhase = phase;
    }
    if (["Succeeded", "Failed", "Cancelled"].includes(phase)) {
      const why = (run.status?.conditions ?? []).filter((c) => c.status !== "True" || c.type === "Completed").map((c) => `${c.type}=${c.status} ${c.reason}: ${c.message}`).join("\n  ");
      kubectl.show(["leviath", "audit", RUN, "-n", NS], { allowFailure: true });
      kubectl.show(["logs", `${RUN}-engine`, "-n", NS, "-c", "agent", "--tail", "30"], { allowFailure: true });
      throw new Error(`the Run ended ${phase} with prompts left unanswered: ${(run.status as { message?: string } | undefined)?.message ?? ""}\n  ${why}`);
    }
    const prompt = run.status?.pendingApprovals?.find((p) => !answered.has(p.id));
    if (prompt?.tool && ANSWERS[prompt.tool]) {
      say(`the Run waits for a person: ${prompt.kind === "taint_gate" ? "the taint gate holds" : "the policy says ask for"} ${prompt.tool}`);
      if (prompt.kind === "taint_gate") kubectl.show(["get", "pods", "-n", NS]);
      kubectl.show(["leviath", "pending", "-n", NS]);
      kubectl.show(["leviath", "approve", RUN, prompt.id, "--once", "--reason", ANSWERS[prompt.tool]!, "-n", NS]);
      answered.add(prompt.id);
    }
    await sleep(1000);
  }
}

/** What scripts/demo-load-image needs to reach this demo's node (removed when the demo stops). */
function writeDemoEnv(parts: Parts, kubectl: Kubectl): void {
  const ctr = join(process.env.LEVIATH_CONTAINERD_DIR || "/usr/bin", "ctr");
  writeFileSync(DEMO_ENV, [`KUBECONFIG=${parts.cp!.kubeconfigPath}`, `DEMO_PATH=${kubectl.path}`, `CONTAINERD_ADDRESS=${parts.node!.containerdSocket}`, `CTR=${ctr}`, `DEMO_PID=${process.pid}`, ""].join("\n"));
}

async function waitForCtrlC(cp: ControlPlane): Promise<void> {
  say("running; Ctrl-C stops everything");
  process.stdout.write(`  export KUBECONFIG=${cp.kubeconfigPath} PATH=${join(REPO_ROOT, "bin")}:${cp.binDir}:$PATH\n`
    + `  kubectl get agents,runs -A\n  kubectl leviath audit ${RUN} -n ${NS}\n`
    + `  kubectl delete run ${RUN} -n ${NS} && kubectl apply -f examples/run.yaml   # the story again (the script repeats)\n`
    + `  kubectl edit configmap model-script -n ${MODEL_NAMESPACE}                   # your own script (then: kubectl rollout restart deployment/model-server -n ${MODEL_NAMESPACE})\n`
    + "  scripts/demo-load-image claude-code                                       # a client's image onto this node (codex, openai-agents)\n"
    + "  docs/quickstart.md, \"Try your own Agent\" and \"Run Claude Code, Codex or the Agents SDK\", says more\n");
  await new Promise(() => undefined);
}

async function tearDown(parts: Parts): Promise<void> {
  rmSync(DEMO_ENV, { force: true });
  await parts.node?.stop().catch((err: unknown) => process.stderr.write(`demo: stopping the node: ${String(err)}\n`));
  await parts.cp?.stop().catch((err: unknown) => process.stderr.write(`demo: stopping the control plane: ${String(err)}\n`));
}
