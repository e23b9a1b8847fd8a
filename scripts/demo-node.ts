// scripts/demo as root: a real node beside the control plane (containerd, the kubelet, kube-scheduler; the e2e
// harness's), the chart installed with real helm and the images built here, and examples/ run to `Succeeded` by
// the reference runtime. The one stand-in is the model: a local server speaking Anthropic's Messages API, replying
// from a script (src/model-server/scripted-model-server.ts), so no key and no network are needed. What the user
// sees: the pods run, a shell call waiting for a person and answered with `kubectl leviath approve`, a granted read,
// a refused read, the taint gate holding the result until a person lets it leave, then the result and the audit.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { REPO_ROOT, startControlPlane, type ControlPlane } from "../test/integration/harness/control-plane.ts";
import { createTestCluster, useTestCluster } from "../test/integration/harness/test-cluster.ts";
import { imageValues } from "../test/e2e/harness/kube-json.ts";
import { startNode, type Node } from "../test/e2e/harness/node.ts";
import { createWorkspaces, installOperator, NS, tagNodeImage, type RunObject, type Workspaces } from "../test/e2e/harness/operator-fixture.ts";
import { startScriptedModelServer, type ScriptedModelServer } from "../src/model-server/scripted-model-server.ts";

const RUN = "digest-docs";
/** examples/policy.yaml's sandbox floor: no registry is reachable here, so Debian is built here under that name. */
const EXAMPLE_SANDBOX_IMAGE = "docker.io/library/debian:bookworm-slim";
const NOTES = "/data/team-notes/2025-06-02-standup.md";
/** Outside what the Agent declares (it exists in the sidecar): the sidecar refuses it. */
const OUTSIDE = "/etc/passwd";
const DIGEST = "# Digest\n- The docs site moves to the new theme this week.\n- The release checklist lives in docs/release.md.\n";

/**
 * What a fresh machine lacks, in order, with what the first run costs on 2 cores (measured here; later runs skip
 * each step in well under a second).
 */
const SETUP: readonly { script: string; what: string; firstRun: string }[] = [
  { script: "node-packages", what: "containerd, runc, CNI plugins, buildah and busybox (Debian packages)", firstRun: "under a minute" },
  { script: "control-plane-bin", what: "etcd, kube-apiserver, kube-controller-manager, kubectl and helm, built from their Go modules", firstRun: "25 to 60 minutes on 2 cores" },
  { script: "node-bin", what: "the kubelet and kube-scheduler, built from their Go module", firstRun: "1 to 7 minutes" },
  { script: "build-images", what: "the operator, runtime and sandbox images, built with buildah", firstRun: "about 3 minutes" },
];

/** The model's replies, in order: one call per turn, as a model hijacked by nothing would make them. */
const SCRIPT = [
  { turn: { text: "Listing docs/ first.", calls: [{ id: "call-0001", name: "shell", args: { command: "ls docs" } }] } },
  { turn: { calls: [{ id: "call-0002", name: "read_file", args: { path: NOTES } }] } },
  { turn: { text: "Who else uses this machine?", calls: [{ id: "call-0003", name: "read_file", args: { path: OUTSIDE } }] } },
  { turn: { text: "Enough read.", calls: [{ id: "call-0004", name: "next_stage", args: { stage: "digest", reason: "notes and docs read" } }] } },
  { turn: { calls: [{ id: "call-0005", name: "submit_output", args: { output: DIGEST } }] } },
];

/** The answers the demo gives, as a person would with `kubectl leviath approve`, by the tool the prompt is for. */
const ANSWERS: Record<string, string> = { shell: "a listing of docs/ is fine", submit_output: "the digest may leave" };

interface Parts {
  cp?: ControlPlane;
  node?: Node;
  model?: ScriptedModelServer;
  workspaces?: Workspaces;
}

const say = (line: string) => process.stdout.write(`\n==> ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the demo with a node; resolves to the exit status (0 once the Run succeeded). */
export async function runNodeDemo(opts: { once: boolean }): Promise<number> {
  const parts: Parts = {};
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= tearDown(parts));
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void stop().then(() => process.exit(0)));
  try {
    prepareMachine();
    const kubectl = await startCluster(parts);
    const status = await runExample(parts, kubectl);
    if (!opts.once) await waitForCtrlC(parts.cp!, kubectl.bin);
    return status;
  } finally {
    await stop();
  }
}

function prepareMachine(): void {
  say("preparing this machine (each step is skipped when already done)");
  for (const step of SETUP) {
    const started = performance.now();
    process.stdout.write(`--- scripts/${step.script}: ${step.what} (the first time: ${step.firstRun})\n`);
    execFileSync("bash", [join(REPO_ROOT, "scripts", step.script)], { stdio: ["ignore", "ignore", "inherit"] });
    process.stdout.write(`    done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
}

/** A kubectl that shows the command and its output, as the user would type it. */
interface Kubectl {
  bin: string;
  show(args: readonly string[], opts?: { input?: string; allowFailure?: boolean }): string;
  quiet(args: readonly string[]): string;
}

async function startCluster(parts: Parts): Promise<Kubectl> {
  say("starting a control plane and a node on this machine");
  const log = (line: string) => process.stdout.write(`    ${line}\n`);
  parts.cp = await startControlPlane({ log });
  // Only the images this Run uses (every image the machine built would add a minute of import).
  parts.node = await startNode(parts.cp, { networkPolicy: false, startTimeoutMs: 600_000, log, images: ["leviath-operator", "leviath-agent", "leviath-runtime"] });
  useTestCluster(createTestCluster(parts.cp.kubeconfigPath, parts.cp.binDir));
  const kubectl = makeKubectl(parts.cp);
  const agent = parts.node.images["leviath-agent"];
  const debian = parts.node.images["leviath-runtime"];
  if (!agent || !debian) throw new Error("scripts/build-images made no leviath-agent or leviath-runtime image");
  await tagNodeImage(parts.node, debian, EXAMPLE_SANDBOX_IMAGE);

  say("installing the operator with helm, its policy from examples/policy.yaml (as docs/quickstart.md does)");
  process.stdout.write(`$ helm install leviath charts/leviath-operator -n leviath-system --create-namespace --set-file policy.document=examples/policy.yaml\n`);
  await installOperator(parts.node, { agent: { image: imageValues(agent) } }, ["--set-file", `policy.document=${join(REPO_ROOT, "examples/policy.yaml")}`]);
  kubectl.show(["get", "pods", "-n", "leviath-system"]);
  return kubectl;
}

function makeKubectl(cp: ControlPlane): Kubectl {
  const bin = join(cp.binDir, "kubectl");
  // `kubectl leviath` is bin/kubectl-leviath, found on PATH as any kubectl plugin.
  const env = { ...process.env, KUBECONFIG: cp.kubeconfigPath, PATH: `${join(REPO_ROOT, "bin")}:${cp.binDir}:${process.env.PATH ?? ""}` };
  const run = (args: readonly string[], input?: string) => spawnSync(bin, [...args], { encoding: "utf8", cwd: REPO_ROOT, env, input });
  return {
    bin,
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

async function runExample(parts: Parts, kubectl: Kubectl): Promise<number> {
  parts.model = await startScriptedModelServer(SCRIPT, parts.node!.network.gateway);
  process.stdout.write(`\nThe model is a stand-in: a local server at ${parts.model.url} speaking Anthropic's Messages API, replying from a\n`
    + "script (a shell listing, a granted read, a read outside what the Agent declares, the next stage, the digest).\n");
  parts.workspaces = createWorkspaces("leviath-demo-");
  mkdirSync(join(parts.workspaces.dir, "docs"));
  writeFileSync(join(parts.workspaces.dir, "docs", "release.md"), "# Release checklist\n");

  say("the model's credentials, as docs/quickstart.md makes them (here: the stand-in's URL and a placeholder key)");
  const secret = kubectl.quiet(["create", "secret", "generic", "model-provider", "-n", NS, "--from-literal=ANTHROPIC_API_KEY=sk-ant-demo-placeholder",
    `--from-literal=ANTHROPIC_BASE_URL=${parts.model.url}`, "--dry-run=client", "-o", "json"]);
  const labelled = { ...JSON.parse(secret) as { metadata: Record<string, unknown> } };
  labelled.metadata = { ...labelled.metadata, labels: { "leviath.dev/credential": "true" } };
  kubectl.show(["apply", "-f", "-"], { input: JSON.stringify(labelled) });
  process.stdout.write("# this node has no volume provisioner: a hostPath volume for the Run's workspace claim\n");
  kubectl.show(["apply", "-f", "-"], { input: stringify(parts.workspaces.volume(RUN)) });

  say("the team notes, the Agent and the Run from examples/");
  kubectl.show(["apply", "-f", "examples/team-notes.yaml", "-f", "examples/agent.yaml", "-f", "examples/run.yaml"]);
  await answerPrompts(kubectl, 2);

  say("waiting for the Run to finish");
  kubectl.show(["leviath", "wait", RUN, "-n", NS, "--timeout", "5m"], { allowFailure: true });
  kubectl.show(["get", "run", RUN, "-n", NS]);
  kubectl.show(["leviath", "result", RUN, "-n", NS], { allowFailure: true });
  say("the audit: every call, who decided it and why");
  kubectl.show(["leviath", "audit", RUN, "-n", NS]);
  const phase = (JSON.parse(kubectl.quiet(["get", "run", RUN, "-n", NS, "-o", "json"])) as RunObject).status?.phase;
  process.stdout.write(`\nThe Run ended ${phase}.\n`);
  return phase === "Succeeded" ? 0 : 1;
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
    if (["Succeeded", "Failed", "Cancelled"].includes(phase)) throw new Error(`the Run ended ${phase} with prompts left unanswered`);
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

async function waitForCtrlC(cp: ControlPlane, kubectlBin: string): Promise<void> {
  say("running; Ctrl-C stops everything");
  process.stdout.write(`  export KUBECONFIG=${cp.kubeconfigPath} PATH=${join(REPO_ROOT, "bin")}:$PATH\n  ${kubectlBin} get agents,runs -A\n  ${kubectlBin} leviath audit ${RUN} -n ${NS}\n`);
  await new Promise(() => undefined);
}

async function tearDown(parts: Parts): Promise<void> {
  await parts.model?.close().catch(() => undefined);
  await parts.node?.stop().catch((err: unknown) => process.stderr.write(`demo: stopping the node: ${String(err)}\n`));
  await parts.cp?.stop().catch((err: unknown) => process.stderr.write(`demo: stopping the control plane: ${String(err)}\n`));
  parts.workspaces?.remove();
}
