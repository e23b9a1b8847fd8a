import { spawn } from "node:child_process";
import { delimiter, join } from "node:path";
import { findBinary, REPO_ROOT } from "./control-plane.ts";
import { testCluster } from "./test-cluster.ts";
import type { TestCluster } from "./test-cluster.ts";

/** What a finished tool run printed and how it exited. */
export type ToolResult = { exitCode: number; stdout: string; stderr: string };

/** Options of {@link kubectl} and {@link helm}. */
export type ToolOptions = { input?: string; allowFailure?: boolean; cluster?: TestCluster; timeoutMs?: number };

/** Runs the built kubectl against the test cluster; a non-zero exit throws unless `allowFailure`. */
export async function kubectl(args: string[], opts: ToolOptions = {}): Promise<ToolResult> {
  const cluster = opts.cluster ?? testCluster();
  return runTool("kubectl", cluster, ["--kubeconfig", cluster.kubeconfigPath, ...args], opts);
}

/** Runs the built helm against the test cluster; a non-zero exit throws unless `allowFailure`. */
export async function helm(args: string[], opts: ToolOptions = {}): Promise<ToolResult> {
  const cluster = opts.cluster ?? testCluster();
  return runTool("helm", cluster, ["--kubeconfig", cluster.kubeconfigPath, ...args], opts);
}

async function runTool(name: string, cluster: TestCluster, args: string[], opts: ToolOptions): Promise<ToolResult> {
  const bin = findBinary(name, cluster.binDir);
  if (!bin) throw new Error(`no ${name} in ${cluster.binDir} nor on PATH: run 'bash scripts/control-plane-bin'`);
  const result = await new Promise<ToolResult>((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], timeout: opts.timeoutMs ?? 60_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ exitCode: code ?? (signal ? 128 : 1), stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
  if (result.exitCode !== 0 && !opts.allowFailure) {
    throw new Error(`${name} ${args.slice(2).join(" ")} exited ${result.exitCode}:\n${result.stderr || result.stdout}`);
  }
  return result;
}

/** What one `kubectl leviath` run printed, and its exit status (128 when killed). */
export type PluginResult = { code: number; stdout: string; stderr: string };

/**
 * `kubectl leviath <args>` as a user runs it: the real kubectl, the plugin (bin/kubectl-leviath) found on PATH, the
 * test cluster as KUBECONFIG. Never throws on a non-zero exit: the status is what the tests check.
 */
export function kubectlLeviath(args: readonly string[], timeoutMs = 60_000, cluster: TestCluster = testCluster()): Promise<PluginResult> {
  const bin = findBinary("kubectl", cluster.binDir);
  if (!bin) throw new Error(`no kubectl in ${cluster.binDir}`);
  const env = { ...process.env, KUBECONFIG: cluster.kubeconfigPath, PATH: [join(REPO_ROOT, "bin"), process.env.PATH].join(delimiter) };
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["leviath", ...args], { env, timeout: timeoutMs });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? 128, stdout, stderr }));
  });
}
