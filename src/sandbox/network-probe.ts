import { API_VERSION, FIELD_MANAGER, LABEL } from "../api/constants.ts";
import type { KubeObject, ObjectMeta } from "./kube-types.ts";
import { buildContainerSecurityContext, buildPodSecurityContext, buildTmpVolume, type PodSettings } from "./pod-settings.ts";

/** The probe's roles: a TCP server, a client no policy selects (the control) and one under a deny-all policy. */
export type ProbeRole = "server" | "open" | "closed";

/** Label on every probe object; its value is the probe's id, so one probe's policy selects only its own pod. */
export const PROBE_LABEL = "leviath.dev/network-probe";
/** Label naming the role of a probe pod. */
export const PROBE_ROLE_LABEL = "leviath.dev/network-probe-role";
/** The port the probe server listens on (unprivileged: the pods run as non-root with no capabilities). */
export const PROBE_PORT = 8080;
/** How long a client waits before it connects: a data plane programs a new pod's rules shortly after it starts. */
export const PROBE_CLIENT_DELAY_MS = 5000;
/**
 * How long after its first attempt a client keeps trying (once a second, each attempt given 3 s): on a loaded node
 * a new pod's network or the server's listener may not be up at the first attempt, and one refused attempt must
 * not make the probe inconclusive.
 */
export const PROBE_CLIENT_RETRY_MS = 10_000;
/** A probe pod that outlives a crashed controller still ends. */
const PROBE_DEADLINE_SECONDS = 300;

/**
 * The server's program: answers every connection with "ok". A client exits as soon as it connects, which may reset
 * the connection; the socket's error is ignored, so that one client's reset never ends the server before the other
 * client connects (it did: on a plugin that ignores NetworkPolicy the closed client connected first, and the
 * probe called the open one's refusal inconclusive).
 */
export function buildProbeServerScript(port: number): string {
  return `require("node:net").createServer((s) => { s.on("error", () => {}); s.end("ok"); }).listen(${port})`;
}

const SERVER_SCRIPT = buildProbeServerScript(PROBE_PORT);

/**
 * The client's program: after `delayMs`, connect to `PROBE_TARGET`:`port`, again once a second until `retryMs`
 * after the first attempt. Exit 0: one attempt connected; 1: every attempt was refused, reset, unreachable or
 * unanswered within 3 s.
 */
export function buildProbeClientScript(port: number, delayMs: number, retryMs: number): string {
  return `const net = require("node:net"); const until = Date.now() + ${delayMs + retryMs};
const attempt = () => { const s = net.connect(${port}, process.env.PROBE_TARGET); let over = false;
  const fail = () => { if (over) return; over = true; s.destroy(); if (Date.now() + 1000 < until) setTimeout(attempt, 1000); else process.exit(1); };
  s.setTimeout(3000, fail); s.on("connect", () => process.exit(0)); s.on("error", fail); };
setTimeout(attempt, ${delayMs});`;
}

const CLIENT_SCRIPT = buildProbeClientScript(PROBE_PORT, PROBE_CLIENT_DELAY_MS, PROBE_CLIENT_RETRY_MS);

/** The names of one probe's objects. */
export function buildProbeNames(id: string): Record<ProbeRole | "policy", string> {
  return { server: `leviath-netprobe-${id}-server`, open: `leviath-netprobe-${id}-open`, closed: `leviath-netprobe-${id}-closed`, policy: `leviath-netprobe-${id}-deny` };
}

/** The LeviathPolicy a probe runs for: its objects are owned by it, so they go with it whatever befell the controller. */
export interface ProbeOwner {
  name: string;
  uid: string;
}

function probeMeta(name: string, namespace: string, id: string, opts: { role?: ProbeRole | undefined; owner?: ProbeOwner | undefined }): ObjectMeta {
  const { role, owner } = opts;
  return {
    name, namespace,
    ...(owner ? { ownerReferences: [{ apiVersion: API_VERSION, kind: "LeviathPolicy", name: owner.name, uid: owner.uid }] } : {}),
    labels: { [LABEL.managedBy]: FIELD_MANAGER, [PROBE_LABEL]: id, ...(role ? { [PROBE_ROLE_LABEL]: role } : {}) },
  };
}

/**
 * One probe pod: the operator's own image (it has `node`), the sandbox pods' restricted settings, no
 * service-account token, never restarted. Clients get the server's address in `PROBE_TARGET`.
 */
export function buildProbePod(opts: { id: string; namespace: string; role: ProbeRole; settings: PodSettings; target?: string; nodeName?: string; owner?: ProbeOwner }): KubeObject {
  const names = buildProbeNames(opts.id);
  const script = opts.role === "server" ? SERVER_SCRIPT : CLIENT_SCRIPT;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: probeMeta(names[opts.role], opts.namespace, opts.id, { role: opts.role, owner: opts.owner }),
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 0,
      activeDeadlineSeconds: PROBE_DEADLINE_SECONDS,
      ...(opts.nodeName ? { nodeName: opts.nodeName } : {}),
      securityContext: buildPodSecurityContext(opts.settings.runAsUser),
      containers: [{
        name: "probe",
        image: opts.settings.sidecarImage,
        command: ["node", "-e", script],
        ...(opts.target ? { env: [{ name: "PROBE_TARGET", value: opts.target }] } : {}),
        securityContext: buildContainerSecurityContext(),
        resources: { requests: { cpu: "10m", memory: "32Mi" }, limits: { cpu: "200m", memory: "128Mi", "ephemeral-storage": "16Mi" } },
        volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
      }],
      volumes: [buildTmpVolume("tmp", "16Mi")],
    },
  };
}

/** The deny-all (ingress and egress) policy over the `closed` client of one probe, as a Run's `network = false`. */
export function buildProbePolicy(id: string, namespace: string, owner?: ProbeOwner): KubeObject {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: probeMeta(buildProbeNames(id).policy, namespace, id, { owner }),
    spec: { podSelector: { matchLabels: { [PROBE_LABEL]: id, [PROBE_ROLE_LABEL]: "closed" } }, policyTypes: ["Ingress", "Egress"] },
  };
}

/** How a client pod ended: connected (exit 0), refused (exit non-zero), or not (yet) run. */
export type ProbeOutcome = "connected" | "refused" | "pending";

/** The verdict of one probe from its two clients. */
export function decideProbeVerdict(open: ProbeOutcome, closed: ProbeOutcome): { state: "Verified" | "NotEnforced" | "Unknown"; message: string } {
  if (open === "pending" || closed === "pending") return { state: "Unknown", message: "the probe pods did not finish in time (no schedulable node, or the image cannot be run)" };
  if (open === "refused") return { state: "Unknown", message: "inconclusive: the probe client without a policy could not reach the probe server either" };
  if (closed === "connected") return { state: "NotEnforced", message: "a probe pod under a deny-all NetworkPolicy connected to another pod: the network plugin ignores NetworkPolicy" };
  return { state: "Verified", message: "a probe pod under a deny-all NetworkPolicy was refused while its twin without one connected" };
}
