import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { WebSearchSchema } from "../../api/leviath-policy.ts";
import { RunPolicySchema } from "../../api/run-policy.ts";
import { createSidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import { createResultSink } from "../core/run-result.ts";
import type { ToolGateway } from "../core/tool-gateway.ts";
import { buildExecutorTable, pickExecutor, type ExecutionRequest, type ExecutorDeps } from "./executor-table.ts";
import { checkFilePaths } from "./file-tools.ts";
import type { ShellRequest } from "./shell.ts";

// The executor table: which executor a tool goes to, when its allow is recorded, and what each one comes back with.
const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };
const stage = RunPolicySchema.parse({
  agent: { key: "ns/app", name: "app" }, stages: [{ name: "build", sandbox }], entryStage: "build",
  launch: { mode: "interactive", allow: [] }, toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false }, taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 },
}).stages[0]!;

const gateway = (calls: [string, Record<string, unknown>][]): ToolGateway => ({
  ready: async () => {},
  tools: () => [],
  find: (name) => (name === "docs__search" ? { name, server: "docs", tool: { name: "search", inputSchema: { type: "object" } } } : undefined),
  claims: (name) => name.startsWith("docs__"),
  servers: () => [],
  call: async (name, args) => (calls.push([name, args]), { text: "found it", isError: false }),
  lists: (server, tool) => server === "docs" && tool === "search",
  callUpstream: async (server, tool, args) => (calls.push([`${server}/${tool}`, args]), { text: "found it", isError: false }),
  close: async () => {},
});

function setup(extra: Partial<ExecutorDeps> = {}) {
  const shellRuns: ShellRequest[] = [];
  const metrics = createSidecarMetrics();
  const table = buildExecutorTable({
    shell: { label: "local", run: async (r) => (shellRuns.push(r), { exitCode: r.command === "slow" ? null : 3, stdout: "out\n", stderr: "", timedOut: r.command === "slow" }) },
    metrics, log: pino({ level: "silent" }), ...extra,
  });
  const request = (tool: string, args: Record<string, unknown>, more: Partial<ExecutionRequest> = {}): ExecutionRequest => ({ id: "c1", tool, args, stage, shellTimeoutSeconds: 7, outbound: { allowLocalNetwork: false, timeoutSeconds: 5 }, paths: undefined, ...more });
  const counter = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values;
  return { table, shellRuns, request, counter };
}

describe("executor table", () => {
  it("picks an executor by the tool's executor kind, the gateway for its servers' names, else the runtime", () => {
    const gw = gateway([]);
    expect(["read_file", "write_file", "shell", "bash", "submit_output", "web_fetch", "web_search", "docs__search", "other__x"].map((t) => pickExecutor(t, gw)))
      .toEqual(["file", "file", "shell", "shell", "result", "http", "search", "gateway", "runtime"]);
    expect(pickExecutor("docs__search", undefined)).toBe("runtime");
  });

  it("records a file tool's allow after it runs, every other one before", () => {
    const { table } = setup();
    expect(Object.fromEntries(Object.entries(table).map(([k, e]) => [k, e.records]))).toEqual({ file: "after", shell: "before", http: "before", search: "before", result: "before", runtime: "before", gateway: "before" });
  });

  it("runs a file tool on the paths the decision resolved", async () => {
    const workdir = realpathSync(mkdtempSync(join(tmpdir(), "leviath-exec-")));
    writeFileSync(join(workdir, "a.txt"), "hello");
    const { table, request } = setup();
    const paths = checkFilePaths("read_file", { path: "a.txt" }, { workdir, policy: null, fs: { realpath: (p) => realpathSync.native(p) } });
    expect(await table.file.execute(request("read_file", { path: "a.txt" }, { paths }))).toEqual({ kind: "done", result: "hello", isError: false });
    await expect(table.file.execute(request("read_file", { path: "a.txt" }))).rejects.toThrow("without its resolved paths");
  });

  it("runs shell in the stage with the policy's timeout, counts it, and reports its exit", async () => {
    const { table, request, shellRuns, counter } = setup();
    expect(await table.shell.execute(request("shell", { command: "make" }))).toEqual({ kind: "done", result: "out\n[exit code: 3]", isError: false, shell: { exitCode: 3, timedOut: false } });
    expect(await table.shell.execute(request("bash", { command: "slow" }))).toMatchObject({ kind: "done", isError: true, shell: { exitCode: null, timedOut: true } });
    expect(shellRuns.map((r) => [r.command, r.timeoutSeconds, r.stage.name])).toEqual([["make", 7, "build"], ["slow", 7, "build"]]);
    expect((await counter("leviath_sidecar_shell_commands_total")).map((v) => [v.labels["outcome"], v.value])).toEqual([["exited", 1], ["timed_out", 1]]);
  });

  it("stores a result before handing it back, and refuses one that cannot be stored", async () => {
    expect(await setup().table.result.execute(setup().request("submit_output", { output: "x" }))).toEqual({ kind: "handed-back" });
    const stored = createResultSink("app-result", { external: async () => {} });
    const ok = setup({ result: stored });
    expect(await ok.table.result.execute(ok.request("submit_output", { output: "done" }))).toEqual({ kind: "handed-back" });
    expect(stored.current()).toMatchObject({ inline: "done", callId: "c1", stage: "build" });
    const failing = setup({ result: createResultSink("app-result", { external: async () => {}, reference: async () => { throw new Error("forbidden"); } }) });
    expect(await failing.table.result.execute(failing.request("submit_output", { output: "x" }))).toEqual({
      kind: "refused", code: "result-not-stored", message: "[error] Tool 'submit_output' was not run: its output could not be stored.",
    });
  });

  it("carries a gateway tool's call to its server and counts it; hands a runtime tool back untouched", async () => {
    const calls: [string, Record<string, unknown>][] = [];
    const s = setup({ gateway: gateway(calls) });
    expect(await s.table.gateway.execute(s.request("docs__search", { q: "x" }))).toEqual({ kind: "done", result: "found it", isError: false });
    expect(calls).toEqual([["docs__search", { q: "x" }]]);
    expect((await s.counter("leviath_sidecar_mcp_gateway_calls_total")).map((v) => [v.labels["server"], v.labels["outcome"], v.value])).toEqual([["docs", "ok", 1]]);
    expect(await s.table.runtime.execute(s.request("install_tool", { name: "x" }))).toEqual({ kind: "handed-back" });
  });

  it("sends web_search to its backend with the mapped and fixed arguments; a backend's error names it", async () => {
    const calls: [string, Record<string, unknown>][] = [];
    const s = setup({ gateway: gateway(calls) });
    const webSearch = WebSearchSchema.parse({ server: "docs", tool: "search", queryArgument: "q", countArgument: "limit", arguments: { site: "docs.example" } });
    expect(await s.table.search.execute(s.request("web_search", { query: "zod", count: 5 }, { webSearch }))).toEqual({ kind: "done", result: "found it", isError: false });
    expect(await s.table.search.execute(s.request("web_search", { query: "zod", count: 2, freshness: "day" }, { webSearch }))).toMatchObject({ isError: false });
    expect(calls).toEqual([["docs/search", { site: "docs.example", q: "zod", limit: 5 }], ["docs/search", { site: "docs.example", q: "zod", limit: 2 }]]);
    const failing = setup({ gateway: { ...gateway([]), callUpstream: async () => ({ text: "[error] MCP server 'docs' failed: Request timed out", isError: true }) } });
    expect(await failing.table.search.execute(failing.request("web_search", { query: "zod" }, { webSearch }))).toEqual({
      kind: "done", isError: true, result: "[error] web_search: the search backend (tool 'search' of MCP server 'docs') failed: MCP server 'docs' failed: Request timed out",
    });
    expect((await failing.counter("leviath_sidecar_mcp_gateway_calls_total")).map((v) => [v.labels["outcome"], v.value])).toEqual([["error", 1]]);
    await expect(s.table.search.execute(s.request("web_search", { query: "zod" }))).rejects.toThrow("no backend");
  });
});
