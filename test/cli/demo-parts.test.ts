// The parts of the root demo that need no node (issue 44): the storage provisioner's and the model-server's objects
// as the demo applies them, the demo's model script as `leviath model-server --script` parses it, and the two scripts
// around the running demo: scripts/demo-load-image refuses without a demo to load into, and scripts/demo never runs
// `npm ci` through a linked node_modules (a git worktree sharing another checkout's install: npm ci emptied the
// shared directory and replaced the link, breaking every checkout that used it).
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DEMO_MODEL_SCRIPT } from "../../scripts/demo-node.ts";
import { parseModelScript } from "../../src/model-server/script-file.ts";
import { REPO_ROOT } from "../integration/harness/control-plane.ts";
import { buildLocalPathObjects, LOCAL_PATH_CLASS } from "../e2e/harness/local-path.ts";
import { buildModelSecret, buildModelServerObjects, ECHO_PORT, SCRIPT_PORT } from "../e2e/harness/model-server-deploy.ts";

type Obj = { kind: string; metadata: { name: string; annotations?: Record<string, string> }; data?: Record<string, string>; spec?: Record<string, unknown>; stringData?: Record<string, string> };
const byKind = (objects: Record<string, unknown>[], kind: string) => (objects as Obj[]).filter((o) => o.kind === kind);

const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the demo's storage provisioner", () => {
  const options = { image: "leviath.local/leviath-local-path:t", helperImage: "leviath.local/sandbox:t", hostDir: "/var/lib/demo/local-path" };

  it("is the cluster's default class only when asked, and binds a claim once its pod is placed", () => {
    const [asDefault] = byKind(buildLocalPathObjects({ ...options, isDefault: true }), "StorageClass");
    const [other] = byKind(buildLocalPathObjects({ ...options, isDefault: false }), "StorageClass");
    expect(asDefault).toMatchObject({ metadata: { name: LOCAL_PATH_CLASS, annotations: { "storageclass.kubernetes.io/is-default-class": "true" } }, volumeBindingMode: "WaitForFirstConsumer", reclaimPolicy: "Delete" });
    expect(other!.metadata.annotations).toBeUndefined();
  });

  it("makes each claim's directory under the host directory, as root in the helper pod, world-writable for the Run's user", () => {
    const [config] = byKind(buildLocalPathObjects({ ...options, isDefault: true }), "ConfigMap");
    expect(JSON.parse(config!.data!["config.json"]!)).toEqual({ nodePathMap: [{ node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [options.hostDir] }] });
    expect(config!.data!["setup"]).toContain('mkdir -m 0777 -p "$VOL_DIR"');
    const helper = parse(config!.data!["helperPod.yaml"]!) as { spec: { containers: { image: string; securityContext: unknown }[] } };
    expect(helper.spec.containers[0]).toMatchObject({ image: options.helperImage, securityContext: { runAsUser: 0 } });
    const [deployment] = byKind(buildLocalPathObjects({ ...options, isDefault: true }), "Deployment");
    expect(JSON.stringify(deployment)).toContain(`"image":"${options.image}"`);
  });
});

describe("the demo's model-server", () => {
  it("runs the operator's image on the node's address, the script from its ConfigMap and the echo", () => {
    const objects = buildModelServerObjects({ image: "leviath.local/leviath-operator:t", nodeAddress: "10.244.1.1", script: DEMO_MODEL_SCRIPT });
    const [deployment] = byKind(objects, "Deployment");
    const pod = (deployment!.spec as { template: { spec: { hostNetwork: boolean; containers: { image: string; args: string[] }[] } } }).template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.containers.map((c) => [c.image, c.args])).toEqual([
      ["leviath.local/leviath-operator:t", ["model-server", "--script", "/etc/model-server/script.yaml", "--listen", `$(NODE_ADDRESS):${SCRIPT_PORT}`]],
      ["leviath.local/leviath-operator:t", ["model-server", "--echo", "--listen", `$(NODE_ADDRESS):${ECHO_PORT}`]],
    ]);
    expect(byKind(objects, "ConfigMap")[0]!.data).toEqual({ "script.yaml": DEMO_MODEL_SCRIPT });
    expect(byKind(objects, "Service")).toHaveLength(1);
  });

  it("ships a script model-server accepts: the demo's story, repeated", () => {
    const script = parseModelScript(DEMO_MODEL_SCRIPT);
    expect(script.repeat).toBe(true);
    expect(script.steps.flatMap((s) => s.calls?.map((c) => c.name) ?? [])).toEqual(["shell", "read_file", "read_file", "next_stage", "submit_output"]);
  });

  it("gives each Secret both providers' base URLs, labelled so a Run may name it", () => {
    const secret = buildModelSecret("echo-model", "leviath-sandbox", "10.244.1.1", ECHO_PORT) as Obj & { metadata: { labels: Record<string, string> } };
    expect(secret.metadata.labels).toEqual({ "leviath.dev/credential": "true" });
    expect(secret.stringData).toMatchObject({ ANTHROPIC_BASE_URL: `http://10.244.1.1:${ECHO_PORT}`, OPENAI_BASE_URL: `http://10.244.1.1:${ECHO_PORT}/v1` });
  });
});

describe("scripts/demo-load-image", () => {
  const run = (cache: string, ...args: string[]) =>
    spawnSync("bash", [join(REPO_ROOT, "scripts/demo-load-image"), ...args], { encoding: "utf8", env: { ...process.env, LEVIATH_CACHE: cache } });

  it("refuses when no demo runs, and when the demo that wrote its file is gone", () => {
    const cache = tempDir("leviath-demo-load-");
    const none = run(cache, "codex");
    expect(none.status).toBe(1);
    expect(none.stderr).toContain(`no demo is running (no ${cache}/demo.env): start 'scripts/demo' as root first`);
    // A pid no process has: the kernel's pid_max is below 2^22 + 1 on Linux.
    writeFileSync(join(cache, "demo.env"), "KUBECONFIG=/nowhere\nCONTAINERD_ADDRESS=/nowhere.sock\nCTR=/bin/false\nDEMO_PID=4194305\n");
    const gone = run(cache, "codex");
    expect(gone.status).toBe(1);
    expect(gone.stderr).toContain("(pid 4194305) is gone: start 'scripts/demo' again");
  });

  it("names the kinds it loads", () => {
    const r = run(tempDir("leviath-demo-load-"), "gemini");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("usage: scripts/demo-load-image claude-code|codex|openai-agents");
  });
});

describe("scripts/demo with a linked node_modules", () => {
  it("does not run npm ci through the link: the shared directory and the link stay as they were", () => {
    const checkout = tempDir("leviath-demo-worktree-");
    mkdirSync(join(checkout, "scripts"));
    for (const f of ["scripts/demo", "scripts/node-env", "package-lock.json"]) cpSync(join(REPO_ROOT, f), join(checkout, f));
    const shared = tempDir("leviath-shared-modules-");
    writeFileSync(join(shared, "keep-me"), "another checkout's install\n");
    symlinkSync(shared, join(checkout, "node_modules"));
    const r = spawnSync("bash", [join(checkout, "scripts/demo"), "--help"], { encoding: "utf8", cwd: checkout });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`demo: node_modules links to ${shared}, which has no packages installed: run npm ci where it is`);
    expect(lstatSync(join(checkout, "node_modules")).isSymbolicLink()).toBe(true);
    expect(readdirSync(shared)).toEqual(["keep-me"]);
    expect(existsSync(join(checkout, "node_modules", "keep-me"))).toBe(true);
  });
});
