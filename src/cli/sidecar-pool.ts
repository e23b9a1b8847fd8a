// `leviath sidecar --pool`: the sidecar of a warm pool's pod (docs/controller.md, "Warm pools"). It starts with
// no run and no policy, listens on loopback at once and answers every call 503 `not-bound`, and looks at its own
// pod until the controller binds it to a Run. The binding is checked (sidecar/cluster/pool-binding.ts: the Run's
// uid, its status naming this pod, the snapshot's digest); a binding that does not check out leaves the pod
// refusing everything. A checked one is written into the sidecar's private /tmp and the ordinary cluster sidecar
// takes over, enforcing that snapshot exactly as a cold Run's sidecar enforces the mounted one, with the runtime
// token written at the pool sidecar's start (the runtime beside it asks with it while it waits) and the hand-out
// of the Run's runtime.json and credentials (`POST /v1/binding`, sidecar/cluster/binding-handout.ts).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BINDING_ROUTE } from "../api/binding.ts";
import { buildRefusalBody, lookupRefusalStatus, type RefusalCode } from "../api/sidecar-contract.ts";
import { parseSnapshotData, SNAPSHOT_KEY } from "../sandbox/run-snapshot.ts";
import { createBindingHandout, type BindingHandout } from "../sidecar/cluster/binding-handout.ts";
import { readPoolBinding, type PoolBinding } from "../sidecar/cluster/pool-binding.ts";
import { hasBearer } from "../sidecar/http/request-guard.ts";
import type { KubeClient } from "../kube/client.ts";
import { parseListenAddress } from "./args.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { prepareRuntimeToken } from "./sidecar-secrets.ts";
import { DEFAULT_LISTEN, isLoopbackHost } from "./sidecar-options.ts";

/** How often an unbound sidecar looks at its pod. */
const BIND_POLL_MS = 250;

/** What the Run's sidecar takes over with: the runtime token the pool sidecar wrote, and the binding's hand-out. */
export interface PoolHandover {
  readonly runtimeToken: { token: string; path: string };
  readonly binding: BindingHandout;
}

/** Every call is refused not-bound; the binding's ask, without the runtime token, is refused as the bound sidecar refuses it. */
function refusalOf(req: IncomingMessage, token: string): RefusalCode {
  const asksBinding = req.method === "POST" && (req.url ?? "").split("?")[0] === BINDING_ROUTE;
  return asksBinding && !hasBearer(req, token) ? "runtime-token-required" : "not-bound";
}

function listenRefusing(host: string, port: number, token: string): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    const code = refusalOf(req, token);
    res.writeHead(lookupRefusalStatus(code), { "content-type": "application/json" }).end(JSON.stringify(buildRefusalBody(code)));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** The flags of the cluster sidecar that takes over, with the bound snapshot's files. */
function writeBinding(binding: Extract<PoolBinding, { ok: true }>, argv: readonly string[], pod: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "leviath-bound-"));
  const policyFile = join(dir, SNAPSHOT_KEY.runPolicy);
  writeFileSync(policyFile, binding.data[SNAPSHOT_KEY.runPolicy] ?? "", { mode: 0o400 });
  const parsed = parseSnapshotData({ ...binding.data });
  const files = parsed.ok ? parsed.value.blueprintFiles ?? {} : {};
  const blueprint = Object.keys(files).length > 0 ? join(dir, "blueprint") : undefined;
  if (blueprint !== undefined) {
    mkdirSync(blueprint);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(blueprint, name), text, { mode: 0o400 });
  }
  return [...argv.filter((a) => a !== "--pool"), "--run-policy", policyFile, "--run", binding.run, "--sandbox-pods-of", pod, ...(blueprint ? ["--blueprint-dir", blueprint] : [])];
}

/** Looks at the pod until a binding checks out (resolves it) or `stopped` says stop (resolves undefined). */
async function waitForBinding(read: () => Promise<PoolBinding | undefined>, io: CliIo, stopped: { done: boolean }): Promise<Extract<PoolBinding, { ok: true }> | undefined> {
  let said = "";
  while (!stopped.done) {
    const binding = await read().catch((err: unknown) => ({ ok: false as const, reason: `reading the binding failed: ${(err as Error).message}` }));
    if (binding?.ok) return binding;
    if (binding !== undefined && binding.reason !== said) {
      said = binding.reason;
      io.stderr(`leviath sidecar: binding refused, staying unbound: ${binding.reason}\n`);
    }
    await new Promise((r) => setTimeout(r, BIND_POLL_MS));
  }
  return undefined;
}

/** The hand-out of a checked binding: its one ask is marked in the sidecar's private /tmp, which outlives a restart of the container. */
function buildHandout(client: KubeClient, namespace: string, binding: Extract<PoolBinding, { ok: true }>): BindingHandout {
  return createBindingHandout({ client, namespace, run: binding.run, data: binding.data, givenMarker: join(tmpdir(), `leviath-binding-${binding.runUid}.given`) });
}

/** Runs an unbound pool pod's sidecar until it is bound (then `takeOver` with the bound flags) or stopped. */
export async function runPoolSidecar(argv: readonly string[], values: { listen?: string; kubeconfig?: string; namespace?: string; "runtime-token-file"?: string }, io: CliIo, takeOver: (argv: string[], io: CliIo, handover: PoolHandover) => Promise<number>): Promise<number> {
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
  const { connectKube } = await import("../kube/connect.ts");
  const client = await connectKube(values.kubeconfig ?? io.env["KUBECONFIG"]?.split(":")[0], io.env);
  const server = await listenRefusing(listen.host, listen.port, runtimeToken.token);
  const address = server.address();
  io.stdout(`leviath sidecar (pool pod ${pod}, unbound) refusing on http://${listen.host}:${typeof address === "object" && address ? address.port : listen.port}\n`);
  const stopped = { done: false };
  const onSignal = () => void (stopped.done = true);
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  const binding = await waitForBinding(() => readPoolBinding(client, namespace, pod), io, stopped);
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  // Every connection to the refusing server is dropped at once (a client's keep-alive one would hold the port's hand-over).
  const closed = new Promise((r) => server.close(r));
  server.closeAllConnections();
  await closed;
  if (binding === undefined) return EXIT.ok;
  io.stdout(`leviath sidecar: bound to Run ${binding.run} (uid ${binding.runUid}); its snapshot matches status.snapshotSha256\n`);
  return takeOver(writeBinding(binding, argv, pod), io, { runtimeToken, binding: buildHandout(client, namespace, binding) });
}
