// scripts/demo run as the README says, to its end: what it printed and how it exited. Without KUBECONFIG, so it
// starts its own control plane (and, as root without --no-node, its own node).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "./control-plane.ts";

/** What one scripts/demo run printed, and its exit status. */
export type DemoRun = { code: number | null; stdout: string; stderr: string };

/** Runs `scripts/demo <args>` until it exits. */
export async function runDemo(args: readonly string[]): Promise<DemoRun> {
  const env = { ...process.env };
  delete env.KUBECONFIG;
  const child = spawn("bash", [join(REPO_ROOT, "scripts/demo"), ...args], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}
