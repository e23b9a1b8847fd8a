import { execFileSync } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateCertificates } from "./generate-certificates.ts";
import { buildApiServerArgs, buildControllerManagerArgs, buildEtcdArgs, buildKubeconfig } from "./component-args.ts";
import type { Ports } from "./component-args.ts";
import { freePorts, probe } from "./loopback.ts";
import type { TlsClient } from "./loopback.ts";
import { logTail, registerTeardown, startComponent, startWatchdog, stopComponent, teardownNow } from "./processes.ts";
import type { Component } from "./processes.ts";

/** The repository root, for scripts/ and crds/. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Options of {@link startControlPlane}; every field has a sensible default. */
export type ControlPlaneOptions = {
  /** Where the binaries are; default {@link resolveBinDir}. */
  binDir?: string;
  /** An empty directory for etcd's data, the PKI, the kubeconfig and the logs (removed by stop unless kept); default a new temp dir. */
  dataDir?: string;
  /** Keep the data dir (and its logs) after stop; default `LEVIATH_KEEP_CONTROL_PLANE=1`. */
  keepDataDir?: boolean;
  /** Start kube-controller-manager (garbage collection, namespace deletion, service accounts); default true. */
  controllerManager?: boolean;
  /** How long the whole start may take; default 120 s. */
  startTimeoutMs?: number;
  /** Progress lines; default stderr. */
  log?: (line: string) => void;
  /** More kube-apiserver flags, after the harness's own (e.g. `--watch-cache=false`, so every read goes to etcd). */
  apiServerArgs?: readonly string[];
};

/** A running control plane. `stop()` is idempotent. */
export type ControlPlane = {
  kubeconfigPath: string;
  binDir: string;
  dataDir: string;
  server: string;
  /** etcd's client URL (plain HTTP on loopback): a test that needs etcd itself, e.g. to compact its history. */
  etcdClientUrl: string;
  stop: () => Promise<void>;
};

/** The directory of the binaries: `KUBEBUILDER_ASSETS`, else the cache dir that scripts/control-plane-bin builds. */
export function resolveBinDir(): string {
  return process.env.KUBEBUILDER_ASSETS || cacheBinDir();
}

let cachedBinDir: string | undefined;

/** The build script's cache dir (asked once: the script owns the versions and the layout). */
function cacheBinDir(): string {
  if (cachedBinDir === undefined) {
    const env = { ...process.env };
    delete env.KUBEBUILDER_ASSETS;
    cachedBinDir = execFileSync("bash", [join(REPO_ROOT, "scripts/control-plane-bin"), "--print-dir"], { env, encoding: "utf8" }).trim();
  }
  return cachedBinDir;
}

/**
 * Finds an executable `name`: in `binDir`, then (for what envtest's assets lack, such as
 * kube-controller-manager and helm) in the cache dir the build script fills, then on PATH.
 */
export function findBinary(name: string, binDir: string): string | undefined {
  const dirs = [binDir];
  try {
    dirs.push(cacheBinDir());
  } catch {
    // No build script (a copy of the harness elsewhere): PATH is still searched.
  }
  dirs.push(...(process.env.PATH ?? "").split(delimiter).filter(Boolean));
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager on free loopback ports with a throwaway data
 * dir, and resolves once the API server is ready and the controllers are working. Every process is torn
 * down by `stop()`, by the exit and signal handlers of this process, or by a watchdog when this process
 * is killed outright.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`[control-plane] ${line}\n`));
  const binDir = opts.binDir ?? resolveBinDir();
  const bins = requireBinaries(binDir, opts.controllerManager ?? true);
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), "leviath-control-plane-")));
  await mkdir(dataDir, { recursive: true });
  let keepDataDir = opts.keepDataDir ?? process.env.LEVIATH_KEEP_CONTROL_PLANE === "1";
  const components: Component[] = [];
  const teardown = { dataDir, pids: () => components.map((c) => c.pid), watchdog: startWatchdog(dataDir, keepDataDir), keepDataDir };
  const unregister = registerTeardown(teardown);
  const started = performance.now();
  const deadline = Date.now() + (opts.startTimeoutMs ?? 120_000);
  const env = { ...process.env };
  delete env.KUBECONFIG;

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    const [etcd, ...rest] = components;
    await Promise.all(rest.map((c) => stopComponent(c)));
    if (etcd) await stopComponent(etcd);
    teardown.keepDataDir = keepDataDir;
    teardownNow(teardown);
    unregister();
  };

  try {
    const pki = join(dataDir, "pki");
    await mkdir(pki);
    const certs = await generateCertificates(pki);
    const tls: TlsClient = { ca: readFileSync(certs.caCert), cert: readFileSync(certs.adminCert), key: readFileSync(certs.adminKey) };
    const [etcdClient, etcdPeer, apiServer, controllerManager] = await freePorts(4);
    const ports: Ports = { etcdClient: etcdClient!, etcdPeer: etcdPeer!, apiServer: apiServer!, controllerManager: controllerManager! };
    const server = `https://127.0.0.1:${ports.apiServer}`;
    const kubeconfigPath = join(dataDir, "kubeconfig");
    await writeFile(kubeconfigPath, buildKubeconfig(server, tls.ca, tls.cert, tls.key), { mode: 0o600 });

    const etcd = startComponent("etcd", bins.etcd, buildEtcdArgs(join(dataDir, "etcd"), ports), dataDir, env);
    components.push(etcd);
    await waitUntil(etcd, deadline, async () => {
      const r = await probe(`http://127.0.0.1:${ports.etcdClient}/health`);
      return r.status === 200 && r.body.includes("true");
    });
    log(`etcd ready on 127.0.0.1:${ports.etcdClient} (${seconds(started)})`);

    const apiArgs = [...buildApiServerArgs(join(dataDir, "apiserver"), certs, ports), ...(opts.apiServerArgs ?? [])];
    const apiserver = startComponent("kube-apiserver", bins.apiServer, apiArgs, dataDir, env);
    components.push(apiserver);
    await waitUntil(apiserver, deadline, async () => (await probe(`${server}/readyz`, tls)).status === 200);
    log(`kube-apiserver ready at ${server} (${seconds(started)})`);

    if (bins.controllerManager) {
      const kcmArgs = buildControllerManagerArgs(join(dataDir, "controller-manager"), kubeconfigPath, certs, ports);
      const kcm = startComponent("kube-controller-manager", bins.controllerManager, kcmArgs, dataDir, env);
      components.push(kcm);
      await waitUntil(kcm, deadline, async () => (await probe(`https://127.0.0.1:${ports.controllerManager}/healthz`, tls)).status === 200);
      // The service-account controller creating `default` proves the controllers run with working credentials.
      await waitUntil(kcm, deadline, async () => (await probe(`${server}/api/v1/namespaces/default/serviceaccounts/default`, tls)).status === 200);
      log(`kube-controller-manager ready (${seconds(started)})`);
    }
    log(`control plane up in ${seconds(started)}; kubeconfig ${kubeconfigPath}`);
    return { kubeconfigPath, binDir, dataDir, server, etcdClientUrl: `http://127.0.0.1:${ports.etcdClient}`, stop };
  } catch (error) {
    // Keep the logs of a failed start where the message says they are.
    keepDataDir = true;
    const tails = components.map((c) => `--- ${c.name} (${c.logPath}), last lines:\n${logTail(c.logPath)}`).join("\n");
    await stop();
    const reason = error instanceof Error ? error.message : String(error);
    log(`failed to start (${reason}); data dir and logs kept in ${dataDir}`);
    const message = `control plane failed to start: ${reason}\ndata dir and logs kept in ${dataDir}\n${tails}`;
    throw new Error(message, { cause: error });
  }
}

type Binaries = { etcd: string; apiServer: string; controllerManager: string | undefined };

function requireBinaries(binDir: string, withControllerManager: boolean): Binaries {
  const hint = `build them with 'bash scripts/control-plane-bin', or set KUBEBUILDER_ASSETS to a directory of envtest binaries, or KUBECONFIG to an existing cluster`;
  const need = (name: string): string => {
    const found = findBinary(name, binDir);
    if (!found) throw new Error(`no '${name}' in ${binDir} (nor on PATH): ${hint}`);
    return found;
  };
  return {
    etcd: need("etcd"),
    apiServer: need("kube-apiserver"),
    controllerManager: withControllerManager ? need("kube-controller-manager") : undefined,
  };
}

/** Polls `ready` until it is true; fails early when the component exits, and at the deadline. */
async function waitUntil(component: Component, deadline: number, ready: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (component.exit) {
      throw new Error(`${component.name} exited (code ${component.exit.code}, signal ${component.exit.signal}) before it was ready`);
    }
    if (await ready()) return;
    if (Date.now() > deadline) throw new Error(`${component.name} was not ready before the start timeout`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function seconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`;
}
