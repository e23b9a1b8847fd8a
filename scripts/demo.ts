// The demo behind scripts/demo. As root (a node needs containerd, the kubelet and pod networking): a real node,
// the chart, and examples/ run to Succeeded by the reference runtime (scripts/demo-node.ts). Otherwise, or with
// --no-node: a real control plane on loopback, the CRDs, `leviath controller`, examples/, and what `kubectl get`
// shows; no node runs, so pods are admitted (Pod Security `restricted` included) and never run: a Run is Pending
// until its sandbox deadline (`spec.deadlines.sandboxReadySeconds`), then Failed.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { findBinary, REPO_ROOT, startControlPlane } from "../test/integration/harness/control-plane.ts";

const NAMESPACE = "leviath-sandbox";
/** No node runs the runtime here: any image name will do. */
const RUNTIME_IMAGE = "registry.example/leviath-runtime:demo";
const CRDS = ["agents", "runs", "leviathpolicies", "approvals"].map((p) => `crd/${p}.leviath.dev`);

const USAGE = `Usage: scripts/demo [--once] [--no-node]
  As root: starts a control plane and a node on this machine, installs the operator with helm and runs
  examples/ to Succeeded with the reference runtime and a local stand-in for the model, answering its prompts
  with \`kubectl leviath approve\`. Builds what the machine lacks first (30 to 70 minutes the first time on 2 cores).
  Without root (or with --no-node): a control plane and the controller only; pods are admitted, never run.
  --once     exit after the Run ended (status 0 when it Succeeded) or, without a node, after showing the status
  --no-node  do not start a node, even as root
`;

const { values } = parseArgs({ options: { once: { type: "boolean" }, "no-node": { type: "boolean" }, help: { type: "boolean", short: "h" } } });
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (!values["no-node"] && process.getuid?.() === 0) {
  const { runNodeDemo } = await import("./demo-node.ts");
  process.exit(await runNodeDemo({ once: values.once === true }));
}
if (!values["no-node"]) {
  process.stdout.write("demo: not root, so no node: a node needs containerd, the kubelet and pod networking, which need root.\n"
    + "      What runs: a control plane and the controller; the Agent's findings and the Run's status are real, its pods\n"
    + "      are admitted and never run. Run scripts/demo as root to see the agent run to Succeeded.\n");
}

/** The shutdown under way, once one began (a signal and the controller's exit both ask for it). */
let stopping: Promise<never> | undefined;
const say = (line: string) => process.stdout.write(`\n==> ${line}\n`);
const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;

say("starting a control plane (etcd, kube-apiserver, kube-controller-manager) on 127.0.0.1");
const cp = await startControlPlane({ log: (line) => process.stderr.write(`    ${line}\n`) });
const kubectlBin = findBinary("kubectl", cp.binDir);
if (!kubectlBin) throw new Error(`no kubectl in ${cp.binDir}: run 'bash scripts/control-plane-bin'`);

function kubectl(args: string[], opts: { show?: boolean } = {}): string {
  if (opts.show) process.stdout.write(`$ kubectl ${args.join(" ")}\n`);
  const r = spawnSync(kubectlBin!, ["--kubeconfig", cp.kubeconfigPath, ...args], { encoding: "utf8", cwd: REPO_ROOT });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  if (opts.show) process.stdout.write(r.stdout);
  return r.stdout;
}

say("installing the CRDs (crds/)");
kubectl(["apply", "--server-side", "-f", "crds/"], { show: true });
kubectl(["wait", "--for=condition=Established", "--timeout=60s", ...CRDS]);

say("starting `leviath controller`");
const logPath = join(cp.dataDir, "leviath-controller.log");
const log = createWriteStream(logPath);
const controller = spawn(process.execPath, [
  join(REPO_ROOT, "bin/leviath"), "controller", "--kubeconfig", cp.kubeconfigPath,
  "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", "--runtime-image", RUNTIME_IMAGE,
], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KUBECONFIG: "" } });
const exited = new Promise<number | null>((resolve) => controller.once("exit", (code) => resolve(code)));
let addresses: { metrics?: string; probes?: string } | undefined;
let buffer = "";
controller.stdout.pipe(log);
controller.stderr.setEncoding("utf8").on("data", (chunk: string) => {
  log.write(chunk);
  buffer += chunk;
  for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    try {
      const entry = JSON.parse(line) as { msg?: string; addresses?: typeof addresses };
      if (entry.msg === "controller started") addresses = entry.addresses;
    } catch {
      // not a log line of ours
    }
  }
});
await until(() => addresses !== undefined, "the controller to start", 60_000, () => controller.exitCode !== null);
await until(async () => (await fetch(`http://${addresses!.probes}/readyz`).catch(() => undefined))?.status === 200, "the controller's caches to sync", 60_000);
process.stdout.write(`controller ready (metrics http://${addresses!.metrics}/metrics, log ${logPath})\n`);

say("applying examples/ (namespace, LeviathPolicy, the Run's credential Secret, Agent, Run, Approval, a ConfigMap behind a granted read path)");
// The namespace and the policy first, so the Agent is evaluated against the policy and the Run pins it.
kubectl(["apply", "--server-side", "-f", "examples/namespace.yaml", "-f", "examples/policy.yaml"], { show: true });
// examples/run.yaml names the credential Secret `model-provider` (docs/quickstart.md makes it with a real key); no
// runtime runs here, so a placeholder key does, and the Run goes as far as it can without a node.
kubectl(["create", "secret", "generic", "model-provider", "-n", NAMESPACE, "--from-literal=ANTHROPIC_API_KEY=sk-ant-demo-placeholder"], { show: true });
kubectl(["label", "secret", "model-provider", "-n", NAMESPACE, "leviath.dev/credential=true"], { show: true });
kubectl(["apply", "--server-side", "-f", "examples/"], { show: true });

type Item = { metadata: { name: string }; status?: { policyGeneration?: number; phase?: string; policy?: { generation?: number } } };
const items = (kind: string) => (JSON.parse(kubectl(["get", kind, "-n", NAMESPACE, "-o", "json"])) as { items: Item[] }).items;
await until(() => items("agents").every((a) => a.status?.policyGeneration !== undefined)
  && items("runs").every((r) => r.status?.phase !== undefined && r.status.policy?.generation !== undefined),
  "the Agents' findings and the Runs' phases", 60_000);

// Events are written just after the status they report: wait for one per Agent and Run too.
const eventCount = () => (JSON.parse(kubectl(["get", "events", "-n", NAMESPACE, "--field-selector", "involvedObject.apiVersion=leviath.dev/v1alpha1", "-o", "json"])) as { items: unknown[] }).items.length;
await until(() => eventCount() >= items("agents").length + items("runs").length, "the Agents' and Runs' first events", 30_000);

say(`status after ${elapsed()}`);
kubectl(["get", "leviathpolicy,agents,runs", "-n", NAMESPACE], { show: true });
process.stdout.write("\n");
kubectl(["get", "agents", "-n", NAMESPACE, "-o",
  "custom-columns=AGENT:.metadata.name,VALID:.status.valid,READS:.status.readPaths.display,FINDINGS:.status.findings[*].code"], { show: true });
process.stdout.write("\n");
kubectl(["get", "runs", "-n", NAMESPACE, "-o",
  "custom-columns=RUN:.metadata.name,PHASE:.status.phase,POLICY:.status.policy.generation,CONDITIONS:.status.conditions[*].type"], { show: true });
process.stdout.write("\n");
kubectl(["get", "pods,networkpolicies,roles,configmaps", "-n", NAMESPACE, "-l", "app.kubernetes.io/managed-by=leviath-operator"], { show: true });
process.stdout.write("\n");
kubectl(["get", "events", "-n", NAMESPACE, "--field-selector", "involvedObject.apiVersion=leviath.dev/v1alpha1"], { show: true });
process.stdout.write("\nNo node runs here: the pods were admitted under Pod Security `restricted` and never run. A Run is Pending\n"
  + "until its sandboxReadySeconds (300 s in examples/run.yaml) pass, then Failed with reason SandboxUnavailable.\n");

if (values.once) {
  await shutdown(0);
} else {
  say("running; Ctrl-C stops everything");
  process.stdout.write(`  export KUBECONFIG=${cp.kubeconfigPath}\n  ${kubectlBin} get agents,runs -A\n  ${kubectlBin} get agent notes-digest -n ${NAMESPACE} -o yaml\n`);
  // Ctrl-C reaches the whole process group: the controller exits on it too, which is then no failure.
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void shutdown(0));
  exited.then((code) => {
    if (stopping) return;
    process.stderr.write(`demo: the controller exited (${code}); its log: ${logPath}\n`);
    void shutdown(1);
  }, () => undefined);
}

function shutdown(status: number): Promise<never> {
  stopping ??= stop(status);
  return stopping;
}

async function stop(status: number): Promise<never> {
  if (controller.exitCode === null) controller.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  await cp.stop();
  process.exit(status);
}

async function until(ready: () => boolean | Promise<boolean>, what: string, timeoutMs: number, failed: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (failed() || Date.now() > deadline) {
      process.stderr.write(`demo: gave up waiting for ${what}; the controller's log (${logPath}) ends:\n${readLogTail(40)}\n${describeLeftovers()}`);
      await shutdown(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The last `lines` lines of the controller's log (what a failed wait shows; the in-memory buffer holds only a partial line). */
function readLogTail(lines: number): string {
  try {
    return readFileSync(logPath, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch (err) {
    return `(the log could not be read: ${(err as Error).message})`;
  }
}

/** What the Agents and Runs say so far, for a failed wait: each one's status as the API server holds it. */
function describeLeftovers(): string {
  try {
    const status = (kind: string) => items(kind).map((i) => `${kind}/${i.metadata.name}: ${JSON.stringify(i.status ?? {})}`).join("\n");
    return `${status("agents")}\n${status("runs")}\n`;
  } catch (err) {
    return `(the Agents and Runs could not be read: ${(err as Error).message})\n`;
  }
}

