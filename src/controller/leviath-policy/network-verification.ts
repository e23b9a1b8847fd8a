import type { NetworkEnforcementSpec } from "../../api/leviath-policy.ts";
import type { NetworkEnforcementStatus } from "../../api/status.ts";
import { formatApiTime } from "../../api/time.ts";
import { componentLogger, type Logger } from "../../log/logger.ts";
import type { ControllerMetrics } from "../../metrics/controller-metrics.ts";
import { buildProbeNames, buildProbePod, buildProbePolicy, decideProbeVerdict, type ProbeOutcome, type ProbeOwner, type ProbeRole } from "../../sandbox/network-probe.ts";
import type { PodSettings } from "../../sandbox/pod-settings.ts";
import type { ClusterWriter } from "../cluster-port.ts";
import { ENFORCEMENT_UNCHECKED } from "../run/network-condition.ts";
import { computeEffectivePolicy, type PolicyState } from "./policy-state.ts";

/** What the verifier needs; the clock, ids and timers come in from the manager. */
export interface NetworkVerifierDeps {
  writer: ClusterWriter;
  policy: () => PolicyState;
  settings: PodSettings;
  nowMs: () => number;
  newId: () => string;
  log: Logger;
  metrics: ControllerMetrics;
  /** Called when the state changed: the policy's status and the live Runs' conditions follow it. */
  onChange: () => void;
  /** How often the verifier looks at the policy; default 5 s. */
  tickMs?: number;
}

/** The controller's NetworkPolicy enforcement check. */
export interface NetworkVerifier {
  /** The last result (or "not verified" while none is asked for or none has finished). */
  state(): NetworkEnforcementStatus;
  /** Start checking (the leader only: the probe writes pods). */
  start(): void;
  stop(): Promise<void>;
}

type PodObject = { metadata: { name: string }; spec?: { nodeName?: string }; status?: { phase?: string; podIP?: string } };

const POLL_MS = 1000;

/**
 * Verifies, on the cluster the operator runs in, that NetworkPolicy drops packets: a server pod, a client no
 * policy selects (the control: it must connect) and a client under a deny-all policy (it must not), all in the
 * policy's probe namespace with the sandbox pods' settings. Runs when `spec.networkEnforcement.verify` is on: at
 * start, when that section changes, and every `intervalSeconds`; the probe objects are deleted afterwards, and
 * are owned by the policy, so what a stopped controller left goes with the policy.
 */
export function createNetworkVerifier(deps: NetworkVerifierDeps): NetworkVerifier {
  let current: NetworkEnforcementStatus = ENFORCEMENT_UNCHECKED;
  let lastKey = "";
  let lastRunMs = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const set = (next: NetworkEnforcementStatus, result?: NetworkEnforcementStatus["state"]): void => {
    if (result) deps.metrics.networkProbe(result);
    deps.metrics.networkEnforcement(next.state);
    const changed = JSON.stringify(next) !== JSON.stringify(current);
    current = next;
    if (changed) deps.onChange();
  };

  async function tick(): Promise<void> {
    const effective = computeEffectivePolicy(deps.policy());
    const spec = effective?.spec.networkEnforcement;
    if (!spec?.verify || spec.namespace === undefined) {
      lastKey = "";
      set(ENFORCEMENT_UNCHECKED);
      return;
    }
    const key = JSON.stringify(spec);
    if (key === lastKey && deps.nowMs() - lastRunMs < spec.intervalSeconds * 1000) return;
    lastKey = key;
    lastRunMs = deps.nowMs();
    const log = componentLogger(deps.log, "network-verification").child({ namespace: spec.namespace });
    try {
      // Owned by the policy: what a controller stopped mid-probe (its RBAC gone first at an uninstall, a SIGKILL)
      // could not delete is deleted by the garbage collector with the policy.
      const owner = effective?.uid ? { name: effective.name, uid: effective.uid } : undefined;
      const result = await runProbe({ deps, stopped: () => stopped, owner }, { ...spec, namespace: spec.namespace });
      log.info({ state: result.state, node: result.node }, result.message);
      set(result, result.state);
    } catch (err) {
      log.warn({ err }, "the network probe failed");
      set({ state: "Unknown", message: `the probe could not run: ${(err as Error).message}`, checkedAt: formatApiTime(deps.nowMs()) }, "Unknown");
    }
  }

  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().finally(() => {
        running = undefined;
        schedule();
      });
    }, deps.tickMs ?? 5000);
  };

  return {
    state: () => current,
    start() {
      if (timer || running) return;
      running = tick().finally(() => {
        running = undefined;
        schedule();
      });
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

/** What one probe run reads: the verifier's dependencies, and whether it was stopped meanwhile (then waits end early). */
interface ProbeContext {
  readonly deps: NetworkVerifierDeps;
  readonly stopped: () => boolean;
  /** The policy the probe runs for: every object it makes is owned by it. */
  readonly owner: ProbeOwner | undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Reads the pods until each is `done`, the time is up or the verifier stopped; then returns them as they are. */
async function waitForPods(ctx: ProbeContext, wait: { namespace: string; names: string[]; timeoutMs: number; done: (pod: PodObject | undefined) => boolean }): Promise<(PodObject | undefined)[]> {
  const deadline = ctx.deps.nowMs() + wait.timeoutMs;
  for (;;) {
    const pods = await Promise.all(wait.names.map((n) => ctx.deps.writer.read("pod", wait.namespace, n) as Promise<PodObject | undefined>));
    if (pods.every(wait.done) || ctx.deps.nowMs() >= deadline || ctx.stopped()) return pods;
    await sleep(POLL_MS);
  }
}

const outcome = (pod: PodObject | undefined): ProbeOutcome =>
  pod?.status?.phase === "Succeeded" ? "connected" : pod?.status?.phase === "Failed" ? "refused" : "pending";

/** One probe: the server, then the deny-all policy, then both clients; the verdict from where the clients ended. Every object made is deleted after. */
async function runProbe(ctx: ProbeContext, spec: NetworkEnforcementSpec & { namespace: string }): Promise<NetworkEnforcementStatus> {
  const { deps } = ctx;
  const id = deps.newId().replace(/[^0-9a-f]/g, "").slice(0, 10);
  const names = buildProbeNames(id);
  const ns = spec.namespace;
  const timeoutMs = spec.probeTimeoutSeconds * 1000;
  const created: { kind: "pod" | "networkPolicy"; name: string }[] = [];
  const owner = ctx.owner;
  const pod = (role: ProbeRole, target?: string, nodeName?: string) =>
    buildProbePod({ id, namespace: ns, role, settings: deps.settings, ...(target ? { target } : {}), ...(nodeName ? { nodeName } : {}), ...(owner ? { owner } : {}) });
  try {
    await deps.writer.apply(pod("server"));
    created.push({ kind: "pod", name: names.server });
    const [server] = await waitForPods(ctx, { namespace: ns, names: [names.server], timeoutMs, done: (p) => p?.status?.phase === "Running" && Boolean(p.status.podIP) });
    if (!server?.status?.podIP || server.status.phase !== "Running") {
      return { state: "Unknown", message: `the probe server pod '${ns}/${names.server}' did not run within ${timeoutMs / 1000}s (no schedulable node, or its image cannot be run)`, checkedAt: formatApiTime(deps.nowMs()) };
    }
    const node = server.spec?.nodeName;
    // The policy first: the closed client must never run without it.
    await deps.writer.apply(buildProbePolicy(id, ns, owner));
    created.push({ kind: "networkPolicy", name: names.policy });
    await Promise.all((["open", "closed"] as const).map(async (role) => {
      await deps.writer.apply(pod(role, server.status!.podIP, node));
      created.push({ kind: "pod", name: names[role] });
    }));
    const [open, closed] = await waitForPods(ctx, { namespace: ns, names: [names.open, names.closed], timeoutMs, done: (p) => outcome(p) !== "pending" });
    const verdict = decideProbeVerdict(outcome(open), outcome(closed));
    return { ...verdict, checkedAt: formatApiTime(deps.nowMs()), ...(node ? { node } : {}) };
  } finally {
    await deleteProbeObjects(deps, ns, created);
  }
}

/** Deletes what a probe made, one by one; a failure is logged and the rest still go. */
async function deleteProbeObjects(deps: NetworkVerifierDeps, ns: string, created: readonly { kind: "pod" | "networkPolicy"; name: string }[]): Promise<void> {
  for (const obj of created) {
    await deps.writer.delete({ apiVersion: obj.kind === "pod" ? "v1" : "networking.k8s.io/v1", kind: obj.kind === "pod" ? "Pod" : "NetworkPolicy", metadata: { name: obj.name, namespace: ns } })
      .catch((err: unknown) => deps.log.warn({ err, name: obj.name }, "could not delete a network probe object"));
  }
}
