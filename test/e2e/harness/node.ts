import { execFile, execFileSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { SERVICE_CIDR } from "../../integration/harness/component-args.ts";
import { findBinary, REPO_ROOT } from "../../integration/harness/control-plane.ts";
import { KUBELET_CLIENT_USER } from "../../integration/harness/generate-certificates.ts";
import type { ControlPlane } from "../../integration/harness/control-plane.ts";
import { freePorts, probe } from "../../integration/harness/loopback.ts";
import type { TlsClient } from "../../integration/harness/loopback.ts";
import { logTail, startComponent, stopComponent } from "../../integration/harness/processes.ts";
import type { Component } from "../../integration/harness/processes.ts";
import { issueClientCertificate } from "./issue-client-certificate.ts";
import { netpolBinary, startNetworkPolicyDataPlane } from "./network-policy.ts";
import { cleanUpNode, startNodeWatchdog } from "./node-cleanup.ts";
import type { NodeResources } from "./node-cleanup.ts";
import {
  buildClientKubeconfig, buildCniConfig, buildContainerdConfig, buildKubeletArgs, buildKubeletConfig, buildSchedulerArgs,
} from "./node-config.ts";
import type { NodeLayout, NodePorts, PodNetwork } from "./node-config.ts";
import { importImages, REQUIRED_IMAGES, requireBuiltImages } from "./node-images.ts";
import type { BuiltImage } from "./node-images.ts";
import { waitForNodeReady } from "./wait-for-node-ready.ts";

const run = promisify(execFile);

/**
 * The node's name. The API server dials a kubelet at its Hostname address first, and the node name is
 * that address: "localhost" resolves to loopback everywhere, where the kubelet listens.
 */
export const NODE_NAME = "localhost";

/** Each node's pod subnet is a free `10.244.N.0/24` (N from 1 to 254), so nodes can run side by side. */
export const POD_SUBNET_PREFIX = "10.244";

/** Options of {@link startNode}. */
export type NodeOptions = {
  /** Keep the data dir (logs, configs) after stop; default `LEVIATH_KEEP_NODE=1`. */
  keepDataDir?: boolean;
  /** How long the start may take until the node is Ready; default 180 s. */
  startTimeoutMs?: number;
  /**
   * Enforce NetworkPolicy with kube-router's firewall (scripts/netpol-bin); default off. One enforcing
   * node per machine: a second waits for the first to stop (see network-policy.ts).
   */
  networkPolicy?: boolean;
  /** The images to import, by name (`pause` and `sandbox` always); default every image scripts/build-images made. */
  images?: readonly string[];
  log?: (line: string) => void;
};

/** A running node: containerd, kube-scheduler and a Ready kubelet. `stop()` is idempotent. */
export type Node = {
  name: string;
  dataDir: string;
  containerdSocket: string;
  /** The kubelet's cgroup root: pod `<uid>` lives in `/sys/fs/cgroup/<controller><root>/kubepods/<qos>/pod<uid>`. */
  cgroupRoot: string;
  /** Image references by name (`pause`, `sandbox`, and any other image scripts/build-images made), all imported. */
  images: Record<string, string>;
  network: PodNetwork;
  /** Whether kube-router's firewall enforces NetworkPolicy on this node. */
  networkPolicy: boolean;
  /** The kubelet's HTTPS port on 127.0.0.1 (client certificates or tokens; no anonymous access). */
  kubeletPort: number;
  /** Runs `ctr` against this node's containerd (namespace k8s.io). */
  ctr: (args: string[]) => Promise<string>;
  stop: () => Promise<void>;
};

/** Where scripts/node-bin puts kube-scheduler and kubelet. */
export function nodeBinDir(): string {
  return process.env.LEVIATH_NODE_BIN || execFileSync("bash", [join(REPO_ROOT, "scripts/node-bin"), "--print-dir"], { encoding: "utf8" }).trim();
}

type Tools = { kubelet: string; scheduler: string; containerd: string; ctr: string; containerdDir: string };

function requireTools(): Tools {
  if (process.getuid?.() !== 0) throw new Error("a real node needs root (containerd, runc, cgroups, network namespaces)");
  const bin = nodeBinDir();
  const found = (path: string, hint: string): string => {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      throw new Error(`no ${path}: ${hint}`);
    }
  };
  const packages = "run 'bash scripts/node-packages'";
  found("/usr/sbin/runc", packages);
  found("/usr/lib/cni/bridge", packages);
  // LEVIATH_CONTAINERD_DIR: another containerd (with its shim and ctr), e.g. 2.x built from its Go module.
  const containerdDir = process.env.LEVIATH_CONTAINERD_DIR || "/usr/bin";
  found(join(containerdDir, "containerd-shim-runc-v2"), packages);
  return {
    kubelet: found(join(bin, "kubelet"), "run 'bash scripts/node-bin'"),
    scheduler: found(join(bin, "kube-scheduler"), "run 'bash scripts/node-bin'"),
    containerd: found(join(containerdDir, "containerd"), packages),
    ctr: found(join(containerdDir, "ctr"), packages),
    containerdDir,
  };
}

/**
 * Starts a node on top of a running control plane: containerd with its own root, state and socket,
 * the images of scripts/build-images imported, the CNI bridge network, kube-scheduler, and a kubelet
 * registered as `system:node:localhost`; resolves once the node is Ready. Everything is torn down by
 * `stop()`, or by a watchdog when this process dies first.
 */
export async function startNode(controlPlane: ControlPlane, opts: NodeOptions = {}): Promise<Node> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`[node] ${line}\n`));
  const tools = requireTools();
  const networkPolicy = opts.networkPolicy ?? false;
  const kubeRouter = networkPolicy ? netpolBinary() : undefined;
  const builtImages = pickImages(requireBuiltImages(), opts.images);
  const started = performance.now();
  const deadline = Date.now() + (opts.startTimeoutMs ?? 180_000);
  const dataDir = await mkdtemp(join(tmpdir(), "leviath-node-"));
  // mkdtemp's six characters, lower-cased: the bridge (at most 15 characters), cgroup and chain names.
  const suffix = dataDir.slice(-6).toLowerCase();
  const layout = nodeLayout(dataDir, suffix);
  const network = await choosePodNetwork(suffix);
  let keepDataDir = opts.keepDataDir ?? process.env.LEVIATH_KEEP_NODE === "1";
  const resources: NodeResources = {
    dataDir, cgroupRoot: layout.cgroupRoot, containerdSocket: layout.containerdSocket, bridge: network.bridge,
    natChain: `LEVIATH-${suffix.toUpperCase()}`, cniNetwork: network.name, keepDataDir, networkPolicy,
  };
  const watchdog = startNodeWatchdog(resources);
  const components: Component[] = [];
  // containerd finds its shim on PATH: the one beside it first.
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${tools.containerdDir}:/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ""}` };
  delete env.KUBECONFIG;

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (watchdog !== undefined) {
      try {
        process.kill(-watchdog, "SIGKILL");
      } catch {
        // already gone
      }
    }
    // The kubelet first (it would restart what we kill), then the scheduler, then containerd.
    for (const c of [...components].reverse()) await stopComponent(c);
    cleanUpNode({ ...resources, keepDataDir });
  };

  try {
    const pki = join(controlPlane.dataDir, "pki");
    const ca = { cert: join(pki, "ca.crt"), key: join(pki, "ca.key") };
    const adminTls: TlsClient = { ca: readFileSync(ca.cert), cert: readFileSync(join(pki, "admin.crt")), key: readFileSync(join(pki, "admin.key")) };
    for (const dir of [layout.containerdRoot, layout.containerdState, layout.cniConfDir, layout.cniIpamDir, layout.kubeletRoot, layout.podLogsDir]) {
      await mkdir(dir, { recursive: true });
    }
    makeCgroupRoot(layout.cgroupRoot);
    await setUpNetwork(network, resources.natChain, new URL(controlPlane.server).port);

    await writeFile(join(layout.cniConfDir, "10-leviath.conflist"), buildCniConfig(network, layout.cniIpamDir));
    const containerdConfig = join(dataDir, "containerd.toml");
    await writeFile(containerdConfig, buildContainerdConfig(layout, builtImages.pause!.ref));
    const containerd = startComponent("containerd", tools.containerd, ["--config", containerdConfig, "--log-level", "info"], dataDir, env);
    components.push(containerd);
    const ctr = async (args: string[]): Promise<string> =>
      (await run(tools.ctr, ["--address", layout.containerdSocket, "--namespace", "k8s.io", ...args], { timeout: 120_000 })).stdout;
    await waitUntil(containerd, deadline, async () => existsSync(layout.containerdSocket) && (await ctr(["version"]).then(() => true, () => false)));
    log(`containerd ready (${seconds(started)})`);
    await importImages(tools.ctr, layout.containerdSocket, Object.values(builtImages));
    log(`imported ${Object.keys(builtImages).join(", ")} (${seconds(started)})`);

    const [kubeletPort, kubeletHealthz, schedulerPort] = await freePorts(3);
    const ports: NodePorts = { kubelet: kubeletPort!, kubeletHealthz: kubeletHealthz!, scheduler: schedulerPort! };
    const certDir = join(dataDir, "pki");
    await mkdir(certDir);
    const schedulerCert = await issueClientCertificate(certDir, "scheduler", "/CN=system:kube-scheduler", ca.cert, ca.key);
    const kubeletCert = await issueClientCertificate(certDir, "kubelet", `/O=system:nodes/CN=system:node:${NODE_NAME}`, ca.cert, ca.key);
    const caPem = readFileSync(ca.cert);
    const schedulerKubeconfig = join(dataDir, "scheduler.kubeconfig");
    await writeFile(schedulerKubeconfig, buildClientKubeconfig(controlPlane.server, "system:kube-scheduler", caPem, readFileSync(schedulerCert.cert), readFileSync(schedulerCert.key)), { mode: 0o600 });
    const kubeletKubeconfig = join(dataDir, "kubelet.kubeconfig");
    await writeFile(kubeletKubeconfig, buildClientKubeconfig(controlPlane.server, `system:node:${NODE_NAME}`, caPem, readFileSync(kubeletCert.cert), readFileSync(kubeletCert.key)), { mode: 0o600 });

    const schedulerArgs = buildSchedulerArgs(schedulerKubeconfig, join(dataDir, "scheduler"), join(pki, "apiserver.crt"), join(pki, "apiserver.key"), ports.scheduler);
    const scheduler = startComponent("kube-scheduler", tools.scheduler, schedulerArgs, dataDir, env);
    components.push(scheduler);
    await waitUntil(scheduler, deadline, async () => (await probe(`https://127.0.0.1:${ports.scheduler}/healthz`, adminTls)).status === 200);
    log(`kube-scheduler ready (${seconds(started)})`);

    // The kubelet authorizes every request with a SubjectAccessReview: the API server's client identity
    // needs kubelet-API rights (kubeadm binds the same role).
    await bindApiServerToKubelets(controlPlane);
    const kubeletConfig = join(dataDir, "kubelet.yaml");
    await writeFile(kubeletConfig, buildKubeletConfig(layout, ports, ca.cert));
    const kubeletArgs = buildKubeletArgs(layout, kubeletConfig, kubeletKubeconfig, NODE_NAME, network.gateway);
    const kubelet = startComponent("kubelet", tools.kubelet, kubeletArgs, dataDir, env);
    components.push(kubelet);
    await waitUntil(kubelet, deadline, async () => (await probe(`http://127.0.0.1:${ports.kubeletHealthz}/healthz`)).status === 200);
    log(`kubelet healthy (${seconds(started)})`);
    await waitForNodeReady(controlPlane.server, adminTls, NODE_NAME, deadline, () => kubelet.exit);
    log(`node ${NODE_NAME} Ready in ${seconds(started)}; logs in ${dataDir}`);
    if (kubeRouter) {
      const [healthPort] = await freePorts(1);
      components.push(await startNetworkPolicyDataPlane({
        binary: kubeRouter, kubeconfig: controlPlane.kubeconfigPath, nodeName: NODE_NAME, network, healthPort: healthPort!,
        dataDir, env, deadline: Date.now() + 600_000, log,
      }));
      log(`kube-router's firewall enforces NetworkPolicy (${seconds(started)})`);
    }

    const images = Object.fromEntries(Object.values(builtImages).map((i: BuiltImage) => [i.name, i.ref]));
    return { name: NODE_NAME, dataDir, containerdSocket: layout.containerdSocket, cgroupRoot: layout.cgroupRoot, images, network, networkPolicy, kubeletPort: ports.kubelet, ctr, stop };
  } catch (error) {
    keepDataDir = true;
    const tails = components.map((c) => `--- ${c.name} (${c.logPath}), last lines:\n${logTail(c.logPath)}`).join("\n");
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`node failed to start: ${reason}\ndata dir and logs kept in ${dataDir}\n${tails}`, { cause: error });
  }
}

/** `system:kubelet-api-admin` for the API server's kubelet client identity, in this control plane. */
async function bindApiServerToKubelets(controlPlane: ControlPlane): Promise<void> {
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding",
    metadata: { name: "leviath-apiserver-kubelet-client" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:kubelet-api-admin" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: KUBELET_CLIENT_USER }],
  };
  const kubectl = findBinary("kubectl", controlPlane.binDir);
  if (!kubectl) throw new Error(`no kubectl in ${controlPlane.binDir}`);
  const child = execFile(kubectl, ["--kubeconfig", controlPlane.kubeconfigPath, "apply", "--server-side", "-f", "-"]);
  child.stdin?.end(JSON.stringify(binding));
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`kubectl apply of the kubelet-client binding exited ${code}`))));
    child.once("error", reject);
  });
}

/** The required images and those asked for (all when `names` is undefined); a name that was not built is an error. */
function pickImages(built: Record<string, BuiltImage>, names: readonly string[] | undefined): Record<string, BuiltImage> {
  if (names === undefined) return built;
  const wanted = new Set<string>([...REQUIRED_IMAGES, ...names]);
  const missing = [...wanted].filter((n) => !built[n]);
  if (missing.length > 0) throw new Error(`no ${missing.join(", ")} image: run 'bash scripts/build-images' (as root)`);
  return Object.fromEntries(Object.entries(built).filter(([name]) => wanted.has(name)));
}

function nodeLayout(dataDir: string, suffix: string): NodeLayout {
  return {
    dataDir,
    containerdRoot: join(dataDir, "containerd", "root"),
    containerdState: join(dataDir, "containerd", "state"),
    containerdSocket: join(dataDir, "containerd", "containerd.sock"),
    cniConfDir: join(dataDir, "cni", "net.d"),
    cniIpamDir: join(dataDir, "cni", "ipam"),
    kubeletRoot: join(dataDir, "kubelet"),
    podLogsDir: join(dataDir, "pod-logs"),
    cgroupRoot: `/leviath-node-${suffix}`,
  };
}

/** A bridge `leviath-<suffix>` and a /24 no route of this machine uses yet. */
async function choosePodNetwork(suffix: string): Promise<PodNetwork> {
  const routes = (await run("ip", ["-4", "route", "show"])).stdout;
  const free = Array.from({ length: 254 }, (_, i) => i + 1).filter((n) => !routes.includes(`${POD_SUBNET_PREFIX}.${n}.`));
  const n = free[Math.floor(Math.random() * free.length)];
  if (n === undefined) throw new Error(`no free /24 left in ${POD_SUBNET_PREFIX}.0.0/16 (leftover bridges? 'ip link show type bridge')`);
  return {
    name: `leviath-${suffix}`,
    bridge: `leviath-${suffix}`,
    subnet: `${POD_SUBNET_PREFIX}.${n}.0/24`,
    gateway: `${POD_SUBNET_PREFIX}.${n}.1`,
    serviceCidr: SERVICE_CIDR,
  };
}

/** The kubelet refuses a cgroup root that does not exist in every v1 hierarchy; cleanup removes them. */
function makeCgroupRoot(root: string): void {
  for (const hierarchy of ["cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd", "hugetlb", "net_cls", "net_prio", "perf_event"]) {
    const base = join("/sys/fs/cgroup", hierarchy);
    if (existsSync(base)) mkdirSync(join(base, root), { recursive: true });
  }
}

/**
 * The bridge with the gateway address (the node's IP), and the `kubernetes` Service IP forwarded to the
 * API server on loopback, for pods that talk to the API (the controller, the sidecar): DNAT to 127.0.0.1
 * needs `route_localnet` on the bridge, a setting that goes with the bridge. Nothing leaves the machine.
 */
async function setUpNetwork(network: PodNetwork, chain: string, apiPort: string): Promise<void> {
  const prefix = network.subnet.split("/")[1];
  const sh = async (cmd: string, args: string[]): Promise<void> => {
    await run(cmd, args).catch((error: unknown) => {
      throw new Error(`${cmd} ${args.join(" ")} failed: ${(error as { stderr?: string }).stderr ?? String(error)}`);
    });
  };
  await sh("ip", ["link", "add", network.bridge, "type", "bridge"]);
  await sh("ip", ["addr", "add", `${network.gateway}/${prefix}`, "dev", network.bridge]);
  await sh("ip", ["link", "set", network.bridge, "up"]);
  await writeFile(`/proc/sys/net/ipv4/conf/${network.bridge}/route_localnet`, "1\n");
  const serviceIp = firstHost(network.serviceCidr);
  await sh("iptables", ["-t", "nat", "-N", chain]);
  await sh("iptables", ["-t", "nat", "-A", chain, "-d", `${serviceIp}/32`, "-p", "tcp", "--dport", "443", "-j", "DNAT", "--to-destination", `127.0.0.1:${apiPort}`]);
  await sh("iptables", ["-t", "nat", "-A", "PREROUTING", "-i", network.bridge, "-j", chain]);
}

/** The first host address of an IPv4 CIDR: the `kubernetes` Service's cluster IP. */
export function firstHost(cidr: string): string {
  const octets = (cidr.split("/")[0] ?? "").split(".").map(Number);
  octets[3] = (octets[3] ?? 0) + 1;
  return octets.join(".");
}

async function waitUntil(component: Component, deadline: number, ready: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (component.exit) throw new Error(`${component.name} exited (code ${component.exit.code}, signal ${component.exit.signal}) before it was ready`);
    if (await ready()) return;
    if (Date.now() > deadline) throw new Error(`${component.name} was not ready before the start timeout`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function seconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`;
}
