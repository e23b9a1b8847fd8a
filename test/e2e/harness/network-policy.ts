// The node's NetworkPolicy data plane: kube-router with only its firewall (scripts/netpol-bin), which
// turns every NetworkPolicy into iptables chains and ipsets for the pods of this node. Bridged traffic
// between pods passes iptables only with the bridge's own `nf_call_iptables` on (a setting of our bridge,
// not the host-wide sysctl), so the switch goes with the bridge.
//
// kube-router owns fixed chain names (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-*) in the host's filter
// table and prunes any pod chain it does not know: two on one machine would undo each other. A
// machine-wide lock (flock, held by the process that runs it) lets only one node at a time enforce.
import { execFile, execFileSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "../../integration/harness/control-plane.ts";
import { probe } from "../../integration/harness/loopback.ts";
import { startComponent } from "../../integration/harness/processes.ts";
import type { Component } from "../../integration/harness/processes.ts";
import type { PodNetwork } from "./node-config.ts";

const run = promisify(execFile);

/** Only one node per machine may run kube-router's firewall (see the header). */
export const NETPOL_LOCK = "/run/leviath-netpol.lock";

/** The chain every pod-to-anything and anything-to-pod packet of an enforcing node is sent through. */
export const KUBE_ROUTER_FORWARD_CHAIN = "KUBE-ROUTER-FORWARD";

/** Where scripts/netpol-bin puts kube-router (`LEVIATH_NETPOL_BIN=/path/kube-router` for another one). */
export function netpolBinary(): string {
  const path = process.env.LEVIATH_NETPOL_BIN
    || execFileSync("bash", [join(REPO_ROOT, "scripts/netpol-bin"), "--print-path"], { encoding: "utf8" }).trim();
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`no ${path}: run 'bash scripts/netpol-bin' (and 'bash scripts/node-packages' for iptables and ipset)`);
  }
  return path;
}

/** kube-router's flags: the firewall alone, for the node `nodeName`, no CNI config, no metrics. */
export function buildKubeRouterArgs(kubeconfig: string, nodeName: string, serviceCidr: string, healthPort: number): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    "--run-firewall=true",
    "--run-router=false",
    "--run-service-proxy=false",
    "--enable-cni=false",
    "--enable-ipv4=true",
    "--enable-ipv6=false",
    `--hostname-override=${nodeName}`,
    `--service-cluster-ip-range=${serviceCidr}`,
    `--health-port=${healthPort}`,
    "--metrics-port=0",
    // A periodic full resync besides the event-driven one: a rule removed behind its back comes back.
    "--iptables-sync-period=30s",
    "--v=2",
  ];
}

/**
 * Turns on iptables for bridged traffic on our bridge and starts kube-router under the machine-wide lock;
 * resolves once its health check answers and its top-level chains exist (its first full sync ran).
 */
export async function startNetworkPolicyDataPlane(opts: {
  binary: string; kubeconfig: string; nodeName: string; network: PodNetwork; healthPort: number;
  dataDir: string; env: NodeJS.ProcessEnv; deadline: number; log: (line: string) => void;
}): Promise<Component> {
  await run("ip", ["link", "set", "dev", opts.network.bridge, "type", "bridge", "nf_call_iptables", "1"]);
  const args = buildKubeRouterArgs(opts.kubeconfig, opts.nodeName, opts.network.serviceCidr, opts.healthPort);
  const component = startComponent("kube-router", "/usr/bin/flock", ["--wait", "600", NETPOL_LOCK, opts.binary, ...args], opts.dataDir, opts.env);
  let said = false;
  for (;;) {
    if (component.exit) throw new Error(`kube-router exited (code ${component.exit.code}, signal ${component.exit.signal}) before it was ready`);
    const healthy = (await probe(`http://127.0.0.1:${opts.healthPort}/healthz`)).status === 200;
    if (healthy && (await hasChain(KUBE_ROUTER_FORWARD_CHAIN))) return component;
    if (Date.now() > opts.deadline) throw new Error(`kube-router was not ready before the start timeout (another node holding ${NETPOL_LOCK}?)`);
    if (!said && !healthy) {
      said = true;
      opts.log(`waiting for kube-router (the lock ${NETPOL_LOCK} admits one enforcing node per machine)`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function hasChain(chain: string): Promise<boolean> {
  return run("iptables", ["-t", "filter", "-n", "-L", chain]).then(() => true, () => false);
}

/**
 * Whether kube-router has programmed a pod: its jump rules name the pod in their comment. A pod is
 * enforced only from then on, so tests wait for this before they assert that packets are dropped.
 */
export async function isPodFirewalled(namespace: string, name: string): Promise<boolean> {
  const rules = (await run("iptables-save", ["-t", "filter"])).stdout;
  return rules.includes(`POD name:${name} namespace: ${namespace} `);
}

/**
 * Shell that removes everything kube-router's firewall leaves in the host's filter table and ipset
 * (the node-cleanup script runs it once kube-router is stopped, whoever started it).
 */
export const NETPOL_CLEANUP = `
if iptables -t filter -n -L KUBE-ROUTER-FORWARD >/dev/null 2>&1; then
  iptables-save -t filter | grep -vE 'KUBE-(ROUTER|POD-FW|NWPLCY)' | iptables-restore -T filter
fi
for s in $(ipset list -n 2>/dev/null | grep -E '^KUBE-(SRC|DST)-'); do ipset destroy "$s" 2>/dev/null; done
`;
