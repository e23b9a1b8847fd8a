// The node's no-orphan guarantee: whether the process that started it stops it or is killed outright,
// with a pod running, nothing of the node stays on the machine: no process, mount, cgroup, bridge, NAT
// chain, runc state or data dir. Each case runs its own control plane and node in a child process,
// beside the suite's node (each node has its own bridge and subnet).
import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTestCluster, waitFor } from "../integration/harness/index.ts";
import { buildSandboxPod, runPod } from "./harness/sandbox-pod.ts";

const CONTROL_PLANE = new URL("../integration/harness/control-plane.ts", import.meta.url).pathname;
const NODE = new URL("./harness/node.ts", import.meta.url).pathname;

type Started = {
  child: ChildProcess;
  kubeconfig: string;
  binDir: string;
  dataDir: string;
  cgroupRoot: string;
  bridge: string;
  sandboxImage: string;
};

/**
 * A child process that starts a control plane and a node (importing only the pause and sandbox images the
 * test runs), reports them as one JSON line, and stops both on "stop".
 */
async function startChild(): Promise<Started> {
  const script = `
    import { startControlPlane } from ${JSON.stringify(CONTROL_PLANE)};
    import { startNode } from ${JSON.stringify(NODE)};
    const cp = await startControlPlane({ log: () => {} });
    const node = await startNode(cp, { log: () => {}, keepDataDir: false, images: [] });
    console.log(JSON.stringify({ kubeconfig: cp.kubeconfigPath, binDir: cp.binDir, dataDir: node.dataDir,
      cgroupRoot: node.cgroupRoot, bridge: node.network.bridge, sandboxImage: node.images.sandbox }));
    process.stdin.setEncoding("utf8").on("data", async () => {
      await node.stop();
      await cp.stop();
      console.log("stopped");
      process.exit(0);
    });
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").once("data", (data: string) => resolve(data));
    child.once("exit", (code) => reject(new Error(`the child exited early (${code})`)));
  });
  return { child, ...(JSON.parse(line) as Omit<Started, "child">) };
}

/** Pids of every process in the node's cgroups (the pods), in the pids hierarchy. */
function podPids(cgroupRoot: string): number[] {
  const root = join("/sys/fs/cgroup/pids", cgroupRoot);
  const pids: number[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name === "cgroup.procs") pids.push(...readFileSync(join(dir, entry.name), "utf8").split("\n").filter(Boolean).map(Number));
    }
  };
  walk(root);
  return pids;
}

/** Processes whose command line names the data dir (kubelet, containerd, its shims). */
function processesNaming(dataDir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmd.includes(dataDir) && !cmd.includes("--input-type=module")) found.push(`${pid}: ${cmd}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** runc's state files of containerd's containers, in every containerd namespace. */
function runcStates(): string[] {
  const root = "/run/containerd/runc";
  if (!existsSync(root)) return [];
  return readdirSync(root).flatMap((ns) =>
    readdirSync(join(root, ns)).map((id) => join(root, ns, id, "state.json")).filter((f) => existsSync(f)));
}

/** What of the node is still on the machine; empty when it is all gone. */
function leftovers(started: Started, podProcesses: number[]): string[] {
  const left: string[] = [];
  left.push(...processesNaming(started.dataDir));
  left.push(...podProcesses.filter(isAlive).map((pid) => `pod process ${pid}`));
  const mounts = readFileSync("/proc/self/mountinfo", "utf8").split("\n").map((l) => l.split(" ")[4] ?? "");
  left.push(...mounts.filter((m) => m.startsWith(`${started.dataDir}/`)).map((m) => `mount ${m}`));
  for (const controller of readdirSync("/sys/fs/cgroup")) {
    if (existsSync(join("/sys/fs/cgroup", controller, started.cgroupRoot))) left.push(`cgroup ${controller}${started.cgroupRoot}`);
  }
  if (existsSync(`/sys/class/net/${started.bridge}`)) left.push(`bridge ${started.bridge}`);
  const chain = `LEVIATH-${started.dataDir.slice(-6).toUpperCase()}`;
  if (execFileSync("iptables", ["-t", "nat", "-S"], { encoding: "utf8" }).includes(chain)) left.push(`NAT chain ${chain}`);
  for (const state of runcStates()) {
    if (readFileSync(state, "utf8").includes(`"${started.dataDir}/`)) left.push(`runc state ${state}`);
  }
  if (existsSync(started.dataDir)) left.push(`data dir ${started.dataDir}`);
  return left;
}

/** Starts a child's node and runs a sandbox pod on it; returns the pod's processes. */
async function withRunningPod(started: Started): Promise<number[]> {
  const cluster = createTestCluster(started.kubeconfig, started.binDir);
  await waitFor(() => cluster.core.readNamespacedServiceAccount({ name: "default", namespace: "default" }), { timeoutMs: 60_000 });
  await runPod(buildSandboxPod({ name: "teardown", namespace: "default", image: started.sandboxImage }), cluster);
  const pids = podPids(started.cgroupRoot);
  // The pause process and `sleep infinity`, at least.
  expect(pids.length).toBeGreaterThanOrEqual(2);
  expect(processesNaming(started.dataDir).some((p) => p.includes("containerd-shim"))).toBe(true);
  return pids;
}

describe("node teardown", () => {
  it("leaves nothing behind when the parent stops it with a pod running", async () => {
    const started = await startChild();
    const pods = await withRunningPod(started);
    const exited = new Promise<number | null>((resolve) => started.child.once("exit", (code) => resolve(code)));

    started.child.stdin!.write("stop\n");

    expect(await exited).toBe(0);
    expect(leftovers(started, pods)).toEqual([]);
  });

  it("leaves nothing behind when the parent is killed with SIGKILL with a pod running", async () => {
    const started = await startChild();
    const pods = await withRunningPod(started);

    started.child.kill("SIGKILL");

    const left = await waitFor(() => {
      const now = leftovers(started, pods);
      return now.length === 0 ? now : undefined;
    }, { timeoutMs: 30_000, intervalMs: 500, description: "the watchdog to tear the node down" }).catch(() => leftovers(started, pods));
    expect(left).toEqual([]);
  });
});
