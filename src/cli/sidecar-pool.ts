// `leviath sidecar --pool`: the sidecar of a warm pool's pod (docs/controller.md, "Warm pools"). It starts with
// no run and no policy, listens on loopback at once and answers every call 503 `not-bound` (the runtime's ask for
// its binding is held until then: sidecar/http/unbound-server.ts), and watches its own pod until the controller
// binds it to a Run (sidecar/cluster/pool-binding-wait.ts). The binding is checked (sidecar/cluster/pool-binding.ts:
// the Run's uid, its status naming this pod, the snapshot's digest); a binding that does not check out leaves the
// pod refusing everything. A checked one is written into the sidecar's private /tmp and the ordinary cluster sidecar
// takes over, enforcing that snapshot exactly as a cold Run's sidecar enforces the mounted one, with the runtime
// token written at the pool sidecar's start (the runtime beside it asks with it while it waits) and the hand-out
// of the Run's runtime.json and credentials (`POST /v1/binding`, sidecar/cluster/binding-handout.ts).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { readBlueprintSnapshotEntries } from "../sandbox/blueprint-files.ts";
import { RunPolicySchema } from "../api/run-policy.ts";
import { ControllerSnapshotSchema, RuntimeSnapshotSchema, SNAPSHOT_KEY } from "../sandbox/run-snapshot.ts";
import type { SidecarServerOptions } from "../sidecar/build-sidecar.ts";
import { createBindingHandout, type BindingHandout } from "../sidecar/cluster/binding-handout.ts";
import type { PoolBinding } from "../sidecar/cluster/pool-binding.ts";
import { waitForPoolBinding } from "../sidecar/cluster/pool-binding-wait.ts";
import { answerBindingAsk } from "../sidecar/http/binding-route.ts";
import { listenUnbound } from "../sidecar/http/unbound-server.ts";
import type { KubeClient } from "../kube/client.ts";
import type { ClusterClient } from "../kube/connect.ts";
import { ShellChannels } from "../sidecar/executors/pod-channel-shell.ts";
import { SlotPool } from "../sidecar/executors/pod-exec-sweep.ts";
import { SANDBOX_CONTAINER } from "../sidecar/executors/sandbox-targets.ts";
import { parseListenAddress } from "./args.ts";
import { POOL_WATCH_DELAY_MS } from "./sidecar-cluster.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { prepareRuntimeToken } from "./sidecar-secrets.ts";
import { DEFAULT_EXEC_WAIT_SECONDS, DEFAULT_LISTEN, isLoopbackHost, parsePositiveInt } from "./sidecar-options.ts";

/**
 * What the Run's sidecar takes over with: the runtime token the pool sidecar wrote, the binding's hand-out, its API
 * client, the Run as the binding's check read it (the records go on from it: nothing is read twice), and the shell
 * channels it opened to its sandbox pods while it waited (the Run's calls go on them).
 */
export interface PoolHandover {
  readonly runtimeToken: { token: string; path: string };
  /**
   * Run by the Run's sidecar once built (its audit open), before it listens: the runtime's ask the unbound server
   * holds is answered with the recorded hand-out, then the unbound server closes and gives the port up.
   */
  readonly beforeListen: NonNullable<SidecarServerOptions["beforeListen"]>;
  /** How long after its listen the Run's sidecar starts its watches and status reports (cli/sidecar-cluster.ts). */
  readonly watchDelayMs: number;
  readonly run: unknown;
  readonly binding: BindingHandout;
  readonly client: ClusterClient;
  readonly channels?: ShellChannels | undefined;
}

/** The command line without `--sandbox-pod POD` (and `--sandbox-pod=POD`): the pool's alone, never the Run's sidecar's. */
export function dropSandboxPodFlags(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--sandbox-pod") i++;
    else if (!argv[i]!.startsWith("--sandbox-pod=")) out.push(argv[i]!);
  }
  return out;
}

/** The flags of the cluster sidecar that takes over, with the bound snapshot's files. */
function writeBinding(binding: Extract<PoolBinding, { ok: true }>, argv: readonly string[], pod: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "leviath-bound-"));
  const policyFile = join(dir, SNAPSHOT_KEY.runPolicy);
  writeFileSync(policyFile, binding.data[SNAPSHOT_KEY.runPolicy] ?? "", { mode: 0o400 });
  // The blueprint's files alone: the run policy is parsed once, by the Run's sidecar that loads it.
  const files = readBlueprintSnapshotEntries(binding.data);
  const blueprint = Object.keys(files).length > 0 ? join(dir, "blueprint") : undefined;
  if (blueprint !== undefined) {
    mkdirSync(blueprint);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(blueprint, name), text, { mode: 0o400 });
  }
  return [...dropSandboxPodFlags(argv).filter((a) => a !== "--pool"), "--run-policy", policyFile, "--run", binding.run, "--sandbox-pods-of", pod, ...(blueprint ? ["--blueprint-dir", blueprint] : [])];
}

/** The hand-out of a checked binding: its one ask is marked in the sidecar's private /tmp, which outlives a restart of the container. */
function buildHandout(client: KubeClient, namespace: string, binding: Extract<PoolBinding, { ok: true }>): BindingHandout {
  return createBindingHandout({ client, namespace, run: binding.run, data: binding.data, givenMarker: join(tmpdir(), `leviath-binding-${binding.runUid}.given`) });
}

/**
 * The shell channels to the pool pod's own sandbox pods (`--sandbox-pod`), opened now in the background: each is
 * open (or opening) by the binding, and the Run's first call there runs on it. Its exec waits for each sandbox pod
 * to run as a call's would; one that fails is opened again by that call, as without this.
 */
async function openSandboxChannels(client: ClusterClient, namespace: string, pods: readonly string[], waitMs: number): Promise<ShellChannels | undefined> {
  if (pods.length === 0) return undefined;
  const { createPodExec } = await import("../kube/pod-exec.ts");
  const channels = new ShellChannels({ exec: createPodExec(client, waitMs), namespace, slots: new SlotPool() });
  for (const pod of pods) channels.prepare({ pod, container: SANDBOX_CONTAINER });
  return channels;
}

/**
 * The parsers of what the takeover parses first (the run policy, the snapshot's runtime and controller parts)
 * generated and compiled while nothing binds, on skeletons that hold nothing of any Run (api/schema-warm-up.ts).
 */
async function warmUpSnapshotSchemas(): Promise<void> {
  const { warmUpSchema } = await import("../api/schema-warm-up.ts");
  for (const schema of [RunPolicySchema, ControllerSnapshotSchema, RuntimeSnapshotSchema]) warmUpSchema(schema);
}

/** Stopped unbound: the channels' held execs would keep the process alive until the kubelet's SIGKILL. */
function stopUnbound(channels: ShellChannels | undefined): number {
  channels?.close();
  return EXIT.ok;
}

/** Runs an unbound pool pod's sidecar until it is bound (then `takeOver` with the bound flags) or stopped. */
export async function runPoolSidecar(argv: readonly string[], values: { listen?: string; kubeconfig?: string; namespace?: string; "runtime-token-file"?: string; "sandbox-pod"?: string[]; "exec-wait-seconds"?: string }, io: CliIo, takeOver: (argv: string[], io: CliIo, handover: PoolHandover) => Promise<number>): Promise<number> {
  for (const flag of ["--run-policy", "--run", "--agent", "--blueprint-dir", "--mcp-secrets-dir", "--sandbox-pods-of"]) {
    if (argv.includes(flag)) throw new UsageError(`${flag} cannot be used with --pool (a pool pod learns its run when it is bound)`);
  }
  const pod = io.env["LEVIATH_POD"];
  const namespace = values.namespace ?? io.env["LEVIATH_NAMESPACE"];
  if (!pod || !namespace) throw new UsageError("--pool needs LEVIATH_POD and LEVIATH_NAMESPACE (the pod's own name and namespace)");
  const listen = parseListenAddress("--listen", values.listen ?? DEFAULT_LISTEN);
  if (!isLoopbackHost(listen.host)) throw new UsageError(`--listen '${values.listen}' is not a loopback address: the API serves the runtime beside it only`);
  const tokenFile = values["runtime-token-file"];
  if (tokenFile === undefined) throw new UsageError("--pool needs --runtime-token-file (the runtime beside it asks for its binding with that token)");
  const runtimeToken = prepareRuntimeToken(io, resolve(io.cwd, tokenFile), io.cwd);
  const execWaitMs = parsePositiveInt("--exec-wait-seconds", values["exec-wait-seconds"], DEFAULT_EXEC_WAIT_SECONDS) * 1000;
  const { connectKube } = await import("../kube/connect.ts");
  const client = await connectKube(values.kubeconfig ?? io.env["KUBECONFIG"]?.split(":")[0], io.env);
  const unbound = await listenUnbound(listen.host, listen.port, runtimeToken.token);
  const address = unbound.server.address();
  io.stdout(`leviath sidecar (pool pod ${pod}, unbound) refusing on http://${listen.host}:${typeof address === "object" && address ? address.port : listen.port}\n`);
  const channels = await openSandboxChannels(client, namespace, values["sandbox-pod"] ?? [], execWaitMs);
  // What the takeover loads and builds first, done while nothing binds (the modules stay cached; a failure shows at
  // the takeover).
  void Promise.all([import("../kube/pod-exec.ts"), import("../sidecar/cluster/cluster-approvals.ts"), import("../sidecar/http/app.ts").then((m) => m.warmUpSidecarApp()), warmUpSnapshotSchemas()]).catch(() => undefined);
  const stopped = new AbortController();
  const onSignal = () => stopped.abort();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  const say = (line: string) => io.stderr(`leviath sidecar: ${line}\n`);
  const binding = await waitForPoolBinding({ client, namespace, pod, say, signal: stopped.signal });
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  if (binding === undefined) {
    await unbound.close();
    return stopUnbound(channels);
  }
  io.stdout(`leviath sidecar: bound to Run ${binding.run} (uid ${binding.runUid}); its snapshot matches status.snapshotSha256\n`);
  // The unbound server keeps the port while the Run's sidecar is built; the runtime's held ask gets its binding
  // from it then (no second ask), and any other ask is answered not-bound (it asks the Run's sidecar once it listens).
  const beforeListen: PoolHandover["beforeListen"] = async (handout, log) => {
    if (handout !== undefined) await unbound.handOver(() => answerBindingAsk(handout, log));
    await unbound.close();
  };
  try {
    return await takeOver(writeBinding(binding, argv, pod), io, { runtimeToken, beforeListen, watchDelayMs: POOL_WATCH_DELAY_MS, binding: buildHandout(client, namespace, binding), client, run: binding.read, channels });
  } finally {
    // A takeover that stopped before it listened must not leave the port held.
    await unbound.close();
  }
}
