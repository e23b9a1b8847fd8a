// Runs `leviath controller` as a real child process against the test cluster and reads what it reports.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, testCluster, waitFor } from "../harness/index.ts";

/** A controller process, its log lines so far, and where it serves metrics. */
export interface ControllerProcess {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  metricsUrl: () => string | undefined;
  exited: Promise<number | null>;
  /** The value of `leader_election_master_status`, or undefined when the process does not answer. */
  leaderStatus(): Promise<number | undefined>;
}

function command(): string[] {
  // Prefer the real CLI once it routes `controller`; until then, the same runController through a small entry.
  const routed = readFileSync(join(REPO_ROOT, "src/cli/dispatch.ts"), "utf8").includes("runController");
  return routed ? [join(REPO_ROOT, "bin/leviath"), "controller"] : [join(REPO_ROOT, "test/integration/controller/controller-main.ts")];
}

/**
 * Start `leviath controller` with `args` (the kubeconfig, the test cluster's unless `opts.kubeconfig` names another,
 * and a free metrics port are added), with `opts.env` added to this process's environment.
 */
export function startControllerProcess(args: string[], opts: { kubeconfig?: string; env?: Record<string, string> } = {}): ControllerProcess {
  const child = spawn(process.execPath, [...command(), "--kubeconfig", opts.kubeconfig ?? testCluster().kubeconfigPath, "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, KUBECONFIG: "", ...opts.env },
  });
  const logs: Record<string, unknown>[] = [];
  let buffer = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line, raw: true });
      }
    }
  });
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const metricsUrl = () => {
    const started = logs.find((l) => l["msg"] === "controller started") as { addresses?: { metrics?: string } } | undefined;
    return started?.addresses?.metrics ? `http://${started.addresses.metrics}/metrics` : undefined;
  };
  return {
    child,
    logs,
    metricsUrl,
    exited,
    async leaderStatus() {
      const url = metricsUrl();
      if (!url || child.exitCode !== null) return undefined;
      try {
        const text = await (await fetch(url, { signal: AbortSignal.timeout(2000) })).text();
        const line = text.split("\n").find((l) => l.startsWith("leader_election_master_status{"));
        return line ? Number(line.split(" ").pop()) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * Wait until the process has started serving (its caches synced). Two minutes: on a loaded two-core machine
 * Node's type stripping of the CLI alone took over 30 s.
 */
export async function waitForStarted(proc: ControllerProcess, timeoutMs = 120_000): Promise<void> {
  await waitFor(() => {
    if (proc.child.exitCode !== null) throw new Error(`controller exited ${proc.child.exitCode}: ${JSON.stringify(proc.logs.slice(-5))}`);
    return proc.metricsUrl() !== undefined;
  }, { timeoutMs, description: "the controller process to start" });
}
