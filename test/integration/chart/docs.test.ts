// Every example in examples/ and in the docs this chart ships (README, quickstart, concepts, security,
// operations, metrics, kubectl-leviath) is applied or executed here: the examples with server-side dry runs, the `sh`
// blocks verbatim with bash against the real API server (in the order a reader follows them), the PromQL through
// promtool. A block preceded by `<!-- not run by the tests... -->` is skipped, and the reason is in the doc, with the
// test that runs the same steps (test/cli/docs-commands.test.ts holds every command block to that).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { APPROVAL_TEMPLATE, fillApprovalTemplate, findBinary, helm, installCrds, kubectl, REPO_ROOT, testCluster, waitFor } from "../harness/index.ts";
import { OURS } from "../controller/operator-harness.ts";
import { freePorts } from "../harness/loopback.ts";
import { writeServiceAccountKubeconfig } from "../sidecar-fixtures.ts";
import { applyStream, findPromtool } from "./chart-harness.ts";

const DOCS = ["README.md", "docs/quickstart.md", "docs/concepts.md", "docs/security.md", "docs/operations.md", "docs/metrics.md", "docs/kubectl-leviath.md"];
/** The Prometheus operator's CRDs (test/integration/chart/fixtures/), for metrics.md's ServiceMonitor. */
const MONITORING_CRDS = ["servicemonitors", "podmonitors", "prometheusrules"].map((p) => `${p}.monitoring.coreos.com`);
const SKIP = /<!-- not run by the tests[^>]*-->\s*$/;

type Block = { file: string; lang: string; text: string; skipped: boolean };

/** The fenced code blocks of a Markdown file, with whether the line before marks them as not run. */
function blocksOf(file: string): Block[] {
  const text = readFileSync(join(REPO_ROOT, file), "utf8");
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    file, lang: m[1]!, text: m[2]!, skipped: SKIP.test(text.slice(0, m.index)),
  }));
}

const cli = (args: string[]) => spawnSync(process.execPath, [join(REPO_ROOT, "bin/leviath"), ...args], { cwd: REPO_ROOT, encoding: "utf8" });
let controller: ChildProcess | undefined;
let mayClean = false;

/** Runs one `sh` block with bash, with the built kubectl and helm first on PATH and the test cluster's kubeconfig; returns what it printed (stdout, then stderr). */
function runBlock(block: Block): string {
  const { kubeconfigPath, binDir } = testCluster();
  const tools = [binDir, dirname(findBinary("helm", binDir) ?? binDir)];
  const env = { ...process.env, KUBECONFIG: kubeconfigPath, PATH: [...tools, process.env.PATH].join(delimiter) };
  const r = spawnSync("bash", ["-e", "-o", "pipefail", "-c", block.text], { cwd: REPO_ROOT, env, encoding: "utf8", timeout: 180_000 });
  if (r.status !== 0) throw new Error(`${block.file}: this block exited ${r.status}:\n${block.text}\n--- output:\n${r.stdout}${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

const WEBHOOK_CONFIGURATION = "leviath-operator-specs";
let webhookPort = 0;

type ClientConfig = { url?: string; service?: Record<string, unknown>; caBundle?: string };

/**
 * Points the chart's webhooks at the controller process on loopback (by URL), or back at the chart's Service (what
 * `helm upgrade` expects to find: a live `url` next to the chart's `service` would be invalid); the caBundle stays.
 */
async function pointWebhook(at: "loopback" | "service"): Promise<void> {
  const vwc = JSON.parse((await kubectl(["get", "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION, "-o", "json"])).stdout) as { webhooks: { clientConfig: ClientConfig }[] };
  const service = { name: "leviath-operator-webhook", namespace: "leviath-system", path: "/validate", port: 443 };
  const patch = vwc.webhooks.map((w, i) => ({
    op: "replace", path: `/webhooks/${i}/clientConfig`,
    value: { ...(at === "loopback" ? { url: `https://127.0.0.1:${webhookPort}/validate` } : { service }), ...(w.clientConfig.caBundle ? { caBundle: w.clientConfig.caBundle } : {}) },
  }));
  await kubectl(["patch", "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION, "--type=json", "-p", JSON.stringify(patch)]);
}

/** Waits for what `kubectl rollout status` waits for on a cluster: a replica that answers the webhook. */
async function waitForWebhook(): Promise<void> {
  const probe = JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "webhook-probe", namespace: "leviath-sandbox" }, spec: {} });
  await waitFor(async () => ((await kubectl(["create", "--dry-run=server", "-f", "-"], { input: probe, allowFailure: true })).exitCode === 0 ? true : undefined),
    { timeoutMs: 60_000, description: "the controller's webhook to admit a valid Agent" });
}

/**
 * No node runs the Deployment's pods here: the same controller runs as a process in their stead, with the chart's
 * webhook (on by default) served on loopback, and the configuration the docs just applied points the API server at
 * it by URL instead of through the Service. A fresh process creates its certificate Secret and patches the caBundle.
 */
async function startControllerInPodsStead(): Promise<void> {
  if (controller && controller.exitCode === null) {
    const exited = new Promise((resolve) => controller!.once("exit", resolve));
    controller.kill("SIGKILL");
    await exited;
  }
  [webhookPort] = await freePorts(1) as [number];
  await pointWebhook("loopback");
  // As the chart's ServiceAccount, as its pod would: only that identity may mark the Run's children (the authorship policy).
  const kubeconfig = await writeServiceAccountKubeconfig(join(mkdtempSync(join(tmpdir(), "leviath-docs-")), "operator.kubeconfig"), "leviath-system", "leviath-operator");
  controller = spawn(process.execPath, [join(REPO_ROOT, "bin/leviath"), "controller", "--kubeconfig", kubeconfig,
    "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--runtime-image", "registry.example/leviath-runtime:1",
    "--webhook-bind-address", `127.0.0.1:${webhookPort}`, "--webhook-secret", "leviath-system/leviath-operator-webhook-tls",
    "--webhook-configuration", WEBHOOK_CONFIGURATION, "--webhook-hosts", "127.0.0.1"], { stdio: "ignore", env: { ...process.env, KUBECONFIG: "" } });
  await waitForWebhook();
}

async function cleanUp(): Promise<void> {
  await helm(["uninstall", "leviath-operator", "--namespace", "leviath-system"], { allowFailure: true });
  await kubectl(["delete", "clusterrolebinding", "prometheus-leviath-metrics", "--ignore-not-found"], { allowFailure: true });
  await kubectl(["delete", "namespace", "leviath-sandbox", "leviath-system", "--ignore-not-found"], { timeoutMs: 120_000 });
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
}

beforeAll(async () => {
  // The quickstart uses the real names (leviath-system, leviath-sandbox, the policy `cluster`) and removes them:
  // never against a cluster (KUBECONFIG) that already has them.
  const present = await kubectl(["get", "namespace", "leviath-system", "leviath-sandbox", "-o", "name", "--ignore-not-found"]);
  if (process.env.KUBECONFIG && present.stdout.trim()) {
    throw new Error(`refusing to run the quickstart on ${process.env.KUBECONFIG}: it already has ${present.stdout.trim()}`);
  }
  mayClean = true;
  await installCrds("crds/");
  await cleanUp();
}, 300_000);

afterAll(async () => {
  if (controller && controller.exitCode === null) controller.kill("SIGKILL");
  if (mayClean) await cleanUp();
  for (const name of MONITORING_CRDS) await testCluster().apiext.deleteCustomResourceDefinition({ name }).catch(() => undefined);
}, 300_000);

describe("examples/", () => {
  it("agent.leviath imports to exactly agent.yaml", () => {
    const r = cli(["import", "examples/agent.leviath", "--namespace", "leviath-sandbox"]);
    expect(r.status, r.stderr).toBe(0);
    expect(parse(r.stdout)).toEqual(parse(readFileSync(join(REPO_ROOT, "examples/agent.yaml"), "utf8")));
  });

  it("the Agent's findings under the example policy are the ones its comments promise", () => {
    const r = cli(["validate", "examples/agent.yaml", "--config", "examples/policy.yaml", "--json"]);
    expect(r.status, r.stderr).toBe(0);
    const codes = (JSON.parse(r.stdout) as { code: string }[]).map((f) => f.code);
    expect(codes).toEqual(["read-paths-not-granted", "read-paths-declared", "sandbox-image-clamped", "tool-permission-clamped"]);
    const comment = readFileSync(join(REPO_ROOT, "examples/agent.yaml"), "utf8");
    for (const code of codes) expect(comment).toContain(code);
  });

  it("every example applies to the real API server (server-side dry run, strict fields)", async () => {
    await applyStream(readFileSync(join(REPO_ROOT, "examples/namespace.yaml"), "utf8"), { persist: true });
    // What `kubectl apply -f examples/` applies: no Approval, which could only answer a Run made before it.
    const files = readdirSync(join(REPO_ROOT, "examples")).filter((f) => f.endsWith(".yaml")).sort();
    expect(files).toEqual(["agent.yaml", "namespace.yaml", "policy.yaml", "run.yaml", "team-notes.yaml"]);
    for (const f of files) {
      const r = await applyStream(readFileSync(join(REPO_ROOT, "examples", f), "utf8"));
      expect(r.stdout, f).toMatch(/serverside-applied \(server dry run\)/);
      expect(r.stderr, f).toBe("");
    }
    // The quickstart's Agent of your own (applied as it is), and its clients' Agents and Runs with the image the
    // quickstart's sed puts in.
    const tried = readdirSync(join(REPO_ROOT, "examples/try")).sort();
    expect(tried).toEqual(["agent.yaml", "run.yaml"]);
    const clients = readdirSync(join(REPO_ROOT, "examples/clients")).sort();
    expect(clients).toEqual(["claude-code.yaml", "codex.yaml", "openai-agents.yaml"]);
    for (const f of [...tried.map((t) => `try/${t}`), ...clients.map((c) => `clients/${c}`)]) {
      const text = readFileSync(join(REPO_ROOT, "examples", f), "utf8").replaceAll("IMAGE", "leviath.local/leviath-client:test");
      const r = await applyStream(text);
      expect(r.stdout, f).toMatch(/serverside-applied \(server dry run\)/);
      expect(r.stderr, f).toBe("");
    }
    // The Approval template: refused as it is (its placeholders), created once they are filled in.
    const asIs = await kubectl(["create", "--dry-run=server", "-f", APPROVAL_TEMPLATE], { allowFailure: true });
    expect(asIs.exitCode).not.toBe(0);
    expect(asIs.stderr).toMatch(/generateName|metadata\.name|Invalid value: "<run>/);
    const filled = await kubectl(["create", "--dry-run=server", "-f", "-"], { input: fillApprovalTemplate({ run: "digest-docs", promptId: "tool-call-0001", reason: "fine" }) });
    expect(filled.stdout).toMatch(/^approval\.leviath\.dev\/digest-docs-\S* created \(server dry run\)/);
    await kubectl(["delete", "namespace", "leviath-sandbox"], { timeoutMs: 120_000 });
  });
});

describe("the docs", () => {
  const blocks = DOCS.flatMap(blocksOf);

  it("mark few blocks as not run, and only those", () => {
    // operations.md's Tracing block needs a collector and Runs whose pods run (test/e2e/tracing-run.test.ts installs
    // the chart with tracing.endpoint on a real Jaeger); the one that reads a Run's audit ConfigMaps: test/e2e/run-flow.test.ts runs that command on the real node.
    // The quickstart's second and third need the demo's node and model-server (test/e2e/demo.test.ts runs the second,
    // test/e2e/runtime-*.test.ts the clients of the third on the e2e node); its fourth is the output of the demo
    // without a node (test/integration/chart/demo.test.ts); its fifth, `kubectl leviath approve`, needs a pending
    // prompt, which no Run has without a node (test/integration/kubectl-leviath.test.ts runs it against a real
    // sidecar). kubectl-leviath.md's approve needs one too; its pending, why and describe are examples of output.
    // operations.md's block under "Rolling out a policy" needs running Runs: test/integration/sidecar-rollout.test.ts runs its steps against a real sidecar.
    // Its approval webhook points the controller at the reader's own receiver (test/integration/controller/approval-webhook.test.ts).
    const quickstart = Array.from({ length: 5 }, () => "docs/quickstart.md");
    const operations = Array.from({ length: 5 }, () => "docs/operations.md");
    const plugin = Array.from({ length: 4 }, () => "docs/kubectl-leviath.md");
    expect(blocks.filter((b) => b.skipped).map((b) => b.file)).toEqual(["README.md", ...quickstart, ...operations, ...plugin]);
    expect(blocks.filter((b) => ["yaml", "yml", "json"].includes(b.lang))).toEqual([]);
  });

  it("every PromQL query passes promtool", () => {
    const queries = blocks.filter((b) => b.lang === "promql").map((b) => b.text.trim());
    expect(queries.length).toBeGreaterThanOrEqual(6);
    const file = join(mkdtempSync(join(tmpdir(), "leviath-docs-")), "queries.yaml");
    writeFileSync(file, stringify({ groups: [{ name: "docs", rules: queries.map((expr, i) => ({ record: `leviath:docs:q${i}`, expr })) }] }));
    const r = spawnSync(findPromtool(), ["check", "rules", file], { encoding: "utf8" });
    expect(`${r.stdout}${r.stderr}`).toContain(`SUCCESS: ${queries.length} rules found`);
  });

  it("the README's CLI commands run", () => {
    const readme = blocks.filter((b) => b.file === "README.md" && b.lang === "sh" && !b.skipped);
    expect(readme).toHaveLength(1);
    expect(runBlock(readme[0]!)).toContain("Blueprint 'cto' is valid");
  });

  it("the quickstart's commands, with operations.md's, metrics.md's and kubectl-leviath.md's against the Helm install, run in order", async () => {
    const quickstart = blocks.filter((b) => b.file === "docs/quickstart.md" && b.lang === "sh" && !b.skipped);
    const operations = blocks.filter((b) => b.file === "docs/operations.md" && b.lang === "sh" && !b.skipped);
    const metrics = blocks.filter((b) => b.file === "docs/metrics.md" && b.lang === "sh" && !b.skipped);
    const plugin = blocks.filter((b) => b.file === "docs/kubectl-leviath.md" && b.lang === "sh" && !b.skipped);
    // Nine: the install without Helm is two blocks, as the webhook must answer before the examples are applied.
    expect(quickstart.length).toBe(9);
    expect(operations.length).toBe(2);
    // metrics.md's ServiceMonitor upgrade, against the Prometheus operator's CRDs; kubectl-leviath.md's PATH.
    expect(metrics.length).toBe(1);
    expect(plugin.length).toBe(1);
    await installCrds("test/integration/chart/fixtures/");
    const out: string[] = [];
    for (const block of quickstart) {
      out.push(runBlock(block));
      if (block.text.includes("helm install")) {
        expect(out.at(-1)).toContain("STATUS: deployed");
        expect(out.at(-1)).toContain("kubectl apply -f examples/team-notes.yaml -f examples/agent.yaml -f examples/run.yaml");
        await startControllerInPodsStead();
      }
      if (block.text.includes("kubectl apply --server-side -f deploy/leviath-operator.yaml")) await startControllerInPodsStead();
      if (block.text.includes("kubectl leviath pending")) {
        for (const ops of [...operations, ...metrics, ...plugin]) {
          const upgrade = ops.text.includes("helm upgrade");
          if (upgrade) await pointWebhook("service");
          out.push(runBlock(ops));
          if (metrics.includes(ops)) expect((await kubectl(["get", "servicemonitor", "-n", "leviath-system", "-o", "name"])).stdout).toMatch(/^servicemonitor\.monitoring\.coreos\.com\/leviath-operator/m);
          if (upgrade) {
            await pointWebhook("loopback");
            await waitForWebhook();
          }
        }
      }
    }
    const all = out.join("\n");
    expect(all).toContain("kind: LeviathPolicy");
    expect(all).toMatch(/^warning\tread-paths-not-granted$/m);
    expect(all).toMatch(/^run\.leviath\.dev\/digest-docs\s+notes-digest\s+Pending/m);
    // The plugin ran from PATH as the quickstart puts it there, and found the Run's namespace (no node: no prompt).
    expect(all).toContain("No pending prompts in namespace leviath-sandbox.");
    // metrics.md: the ServiceMonitor the upgrade added, and the reader's binding; kubectl-leviath.md: the plugin listed.
    expect(all).toContain("clusterrolebinding.rbac.authorization.k8s.io/prometheus-leviath-metrics created");
    expect(all).toMatch(/^\S+\/bin\/kubectl-leviath$/m);
    expect(all).toContain("secret/model-provider created");
    expect(all).toContain("secret/openai-provider created");
    expect(all).toContain("run.leviath.dev/digest-openai created");
    expect(all).toMatch(/^Valid=True /m);
    expect(all).toContain("leviathpolicy.leviath.dev/cluster");
    await waitFor(async () => (await kubectl(["get", "namespace", "leviath-system"], { allowFailure: true })).exitCode !== 0, { description: "the plain install removed" });
  }, 600_000);
});
