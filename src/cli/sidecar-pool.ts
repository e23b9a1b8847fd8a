// `leviath sidecar --pool`: the sidecar of a warm pool's pod (docs/controller.md, "Warm pools"). It starts with
// no run and no policy, listens on loopback at once and answers every call 503 `not-bound`, and looks at its own
// pod until the controller binds it to a Run. The binding is checked (sidecar/cluster/pool-binding.ts: the Run's
// uid, its status naming this pod, the snapshot's digest); a binding that does not check out leaves the pod
// refusing everything. A checked one is written into the sidecar's private /tmp and the ordinary cluster sidecar
// takes over, enforcing that snapshot exactly as a cold Run's sidecar enforces the mounted one.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseSnapshotData, SNAPSHOT_KEY } from "../sandbox/run-snapshot.ts";
import { readPoolBinding, type PoolBinding } from "../sidecar/cluster/pool-binding.ts";
import { parseListenAddress } from "./args.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { DEFAULT_LISTEN, isLoopbackHost } from "./sidecar-options.ts";

/** How often an unbound sidecar looks at its pod. */
const BIND_POLL_MS = 250;

/** The answer to every call before the pod is bound. */
const NOT_BOUND = JSON.stringify({ code: "not-bound", message: "this pool pod is not bound to a Run yet: every call is refused" });

function listenRefusing(host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(503, { "content-type": "application/json" }).end(NOT_BOUND);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** The flags of the cluster sidecar that takes over, with the bound snapshot's files. */
function writeBinding(binding: Extract<PoolBinding, { ok: true }>, argv: readonly string[]): string[] {
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
  return [...argv.filter((a) => a !== "--pool"), "--run-policy", policyFile, "--run", binding.run, ...(blueprint ? ["--blueprint-dir", blueprint] : [])];
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

/** Runs an unbound pool pod's sidecar until it is bound (then `takeOver` with the bound flags) or stopped. */
export async function runPoolSidecar(argv: readonly string[], values: { listen?: string; kubeconfig?: string; namespace?: string }, io: CliIo, takeOver: (argv: string[], io: CliIo) => Promise<number>): Promise<number> {
  for (const flag of ["--run-policy", "--run", "--agent", "--blueprint-dir", "--mcp-secrets-dir"]) {
    if (argv.includes(flag)) throw new UsageError(`${flag} cannot be used with --pool (a pool pod learns its run when it is bound)`);
  }
  const pod = io.env["LEVIATH_POD"];
  const namespace = values.namespace ?? io.env["LEVIATH_NAMESPACE"];
  if (!pod || !namespace) throw new UsageError("--pool needs LEVIATH_POD and LEVIATH_NAMESPACE (the pod's own name and namespace)");
  const listen = parseListenAddress("--listen", values.listen ?? DEFAULT_LISTEN);
  if (!isLoopbackHost(listen.host)) throw new UsageError(`--listen '${values.listen}' is not a loopback address: the API serves the runtime beside it only`);
  const { connectKube } = await import("../kube/connect.ts");
  const client = await connectKube(values.kubeconfig ?? io.env["KUBECONFIG"]?.split(":")[0], io.env);
  const server = await listenRefusing(listen.host, listen.port);
  const address = server.address();
  io.stdout(`leviath sidecar (pool pod ${pod}, unbound) refusing on http://${listen.host}:${typeof address === "object" && address ? address.port : listen.port}\n`);
  const stopped = { done: false };
  const onSignal = () => void (stopped.done = true);
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  const binding = await waitForBinding(() => readPoolBinding(client, namespace, pod), io, stopped);
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  await new Promise((r) => server.close(r));
  if (binding === undefined) return EXIT.ok;
  io.stdout(`leviath sidecar: bound to Run ${binding.run} (uid ${binding.runUid}); its snapshot matches status.snapshotSha256\n`);
  return takeOver(writeBinding(binding, argv), io);
}
