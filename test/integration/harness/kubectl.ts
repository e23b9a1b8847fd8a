import { spawn } from "node:child_process";
import { delimiter, join } from "node:path";
import { findBinary, REPO_ROOT } from "./control-plane.ts";
import { testCluster } from "./test-cluster.ts";
import type { TestCluster } from "./test-cluster.ts";

/** What a finished tool run printed and how it exited. */
export type ToolResult = { exitCode: number; stdout: string; stderr: string };

/** Options of {@link kubectl} and {@link helm}. */
export type ToolOptions = { input?: string; allowFailure?: boolean; cluster?: TestCluster; timeoutMs?: number; env?: NodeJS.ProcessEnv };

/** Runs the built kubectl against the test cluster; a non-zero exit throws unless `allowFailure`. */
export async function kubectl(args: string[], opts: ToolOptions = {}): Promise<ToolResult> {
  const cluster = opts.cluster ?? testCluster();
  return runTool("kubectl", cluster, ["--kubeconfig", cluster.kubeconfigPath, ...args], opts);
}

/**
 * Runs `kubectl leviath <args>` as a user does: the built kubectl, which finds the plugin (bin/kubectl-leviath) on
 * PATH and hands it the test cluster's kubeconfig through KUBECONFIG (flags before `leviath` never reach a plugin).
 */
export async function kubectlLeviath(args: string[], opts: ToolOptions = {}): Promise<ToolResult> {
  const cluster = opts.cluster ?? testCluster();
  return runTool("kubectl", cluster, ["leviath", ...args], { ...opts, env: kubectlLeviathEnv(cluster, opts.env) });
}

/** The environment `kubectl leviath` runs in: the plugin's directory first on PATH, the cluster's kubeconfig as KUBECONFIG. */
export function kubectlLeviathEnv(cluster: TestCluster = testCluster(), extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...extra, KUBECONFIG: cluster.kubeconfigPath, PATH: [join(REPO_ROOT, "bin"), process.env.PATH].join(delimiter) };
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
    const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], timeout: opts.timeoutMs ?? 60_000, ...(opts.env ? { env: opts.env } : {}) });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ exitCode: code ?? (signal ? 128 : 1), stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
  if (result.exitCode !== 0 && !opts.allowFailure) {
    const shown = args[0] === "--kubeconfig" ? args.slice(2) : args;
    throw new Error(`${name} ${shown.join(" ")} exited ${result.exitCode}:\n${result.stderr || result.stdout}`);
  }
  return result;
}
