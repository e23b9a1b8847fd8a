// What `leviath controller` loads while it reconciles, as a real process against the real API server: a module hook
// preloaded into it lists every module. Without the webhook it carries neither @bufbuild/cel (about 27 MiB
// resident, needed only to check a policy's rules at admission) nor the webhook's app, nor fastify, nor
// @kubernetes/client-node (its generated model); with a JSON kubeconfig (as here) or the in-cluster account, not the
// YAML parser either.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeModuleHook } from "../../fixtures/module-hook.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, waitFor } from "../harness/index.ts";
import { childrenOf, createAgent, createRun, TEST_RUNTIME_IMAGE } from "./operator-harness.ts";
import { startControllerProcess, waitForStarted, type ControllerProcess } from "./process-harness.ts";

let namespace = "";
let proc: ControllerProcess | undefined;
let loaded: () => string[] = () => [];

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("modules");
  const hook = writeModuleHook(mkdtempSync(join(tmpdir(), "leviath-controller-modules-")));
  loaded = hook.loaded;
  proc = startControllerProcess(["--workers", "2", "--runtime-image", TEST_RUNTIME_IMAGE], { env: { NODE_OPTIONS: hook.nodeOptions } });
  await waitForStarted(proc);
}, 180_000);

afterAll(async () => {
  if (proc && proc.child.exitCode === null) {
    proc.child.kill("SIGTERM");
    await proc.exited;
  }
  if (namespace) await deleteNamespace(namespace);
});

describe("leviath controller: what it loads", { timeout: 180_000 }, () => {
  it("reconciles a Run without loading @bufbuild/cel, the webhook, fastify, @kubernetes/client-node or the YAML parser", async () => {
    await createAgent(namespace, "lean", { sandbox: { kind: "container", image: "debian:bookworm-slim", network: false }, stages: [{ name: "one" }] });
    await createRun(namespace, "lean-1", { agentRef: { name: "lean" }, task: "t" });
    await waitFor(async () => (await childrenOf(namespace, "lean-1")).some((c) => c.ref === "Pod/lean-1-engine"), { description: "the Run's engine pod", timeoutMs: 60_000 });
    const urls = loaded();
    // The hook saw the controller's own modules, so an absence below means something.
    expect(urls.some((u) => /\/(src|dist)\/controller\/run\/run-reconciler\.(ts|js)$/.test(u))).toBe(true);
    expect(urls.some((u) => u.includes("/node_modules/zod/"))).toBe(true);
    expect(urls.filter((u) => u.includes("/node_modules/@bufbuild/cel/"))).toEqual([]);
    // The webhook's flags are parsed (webhook-options.ts, its certificates' defaults); its server and parsers are not loaded.
    expect(urls.filter((u) => /\/controller\/admission\/(webhook-server|webhook-app|spec-admission)\./.test(u))).toEqual([]);
    expect(urls.filter((u) => u.includes("/node_modules/@kubernetes/client-node/"))).toEqual([]);
    expect(urls.filter((u) => u.includes("/node_modules/yaml/"))).toEqual([]);
    // Its metrics and probe servers are node:http; fastify is the webhook's only.
    expect(urls.filter((u) => u.includes("/node_modules/fastify/"))).toEqual([]);
  });
});
