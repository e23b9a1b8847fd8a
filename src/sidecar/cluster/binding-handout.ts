// What a bound pool pod's sidecar hands the runtime beside it, once (docs/controller.md, "Late binding, in the pod";
// docs/security.md, "Warm pools"). A cold engine pod gets its runtime.json and credentials through its spec (the
// snapshot's `runtime.json` key mounted, each credential Secret an `envFrom` or a secret volume); a pool pod's spec
// was written before any Run, so the sidecar reads the same things when asked: `runtime.json` from the digest-checked
// snapshot, and the credential Secrets that snapshot's controller.json pins, with the Run's Role (which names exactly
// those Secrets), and answers with their `data` as the API server returned it. It keeps no copy: the Secrets are
// read on the ask and dropped with the answer. The first ask, whatever its outcome, is the only one: a marker in the
// sidecar's private /tmp (an emptyDir, so it outlives a restart of the sidecar container) refuses every later ask.
import { writeFileSync } from "node:fs";
import type { BindingAnswer, BoundCredential } from "../../api/binding.ts";
import type { RefusalMessageArgs } from "../../api/sidecar-contract.ts";
import type { KubeClient } from "../../kube/client.ts";
import { buildPath, RESOURCES } from "../../kube/resources.ts";
import { parseSnapshotRuntimeParts, SNAPSHOT_KEY } from "../../sandbox/run-snapshot.ts";

/** The outcome of one ask: the binding, or the refusal's code (and its message's arguments). */
export type BindingTake =
  | { readonly ok: true; readonly answer: BindingAnswer }
  | { readonly ok: false; readonly code: "binding-given" }
  | { readonly ok: false; readonly code: "binding-unavailable"; readonly args: RefusalMessageArgs<"binding-unavailable"> };

/** Hands the binding out once. */
export interface BindingHandout {
  take(): Promise<BindingTake>;
}

/** What the hand-out is made from: the bound Run, its checked snapshot's data, and where the marker of the one ask goes. */
export interface BindingHandoutInput {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly run: string;
  readonly data: Readonly<Record<string, string>>;
  /** A file that must not exist yet; created on the first ask. */
  readonly givenMarker: string;
}

/** Claims the one ask: false when it was claimed before (by this process or an earlier start of the container). */
function claim(marker: string): boolean {
  try {
    writeFileSync(marker, "", { flag: "wx", mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

async function readCredential(input: BindingHandoutInput, c: { secretName: string; as: "env" | "files" }): Promise<BoundCredential> {
  const secret = await input.client.request<{ data?: Record<string, string> }>("GET", buildPath(RESOURCES.secret, input.namespace, c.secretName));
  return { secretName: c.secretName, as: c.as, data: secret.data ?? {} };
}

/** The binding of the Run `input` names, read now; or why it cannot be. */
async function readBinding(input: BindingHandoutInput): Promise<BindingTake> {
  // The run policy is the Run's sidecar's to load (it did, before this ask is answered): only these parts are read.
  const snapshot = parseSnapshotRuntimeParts(input.data);
  const runtimeJson = input.data[SNAPSHOT_KEY.runtime];
  if (!snapshot.ok || runtimeJson === undefined) return { ok: false, code: "binding-unavailable", args: [`the Run's snapshot does not parse (${snapshot.ok ? "no runtime.json" : snapshot.message})`] };
  // Read all at once (the runtime waits on this answer); the first that fails, in the snapshot's order, is named.
  const wanted = snapshot.value.controller.credentials;
  const read = await Promise.allSettled(wanted.map((c) => readCredential(input, c)));
  const credentials: BoundCredential[] = [];
  for (const [i, r] of read.entries()) {
    if (r.status === "rejected") return { ok: false, code: "binding-unavailable", args: [`the credential Secret '${wanted[i]!.secretName}' cannot be read with the Run's Role: ${(r.reason as Error).message}`] };
    credentials.push(r.value);
  }
  return { ok: true, answer: { run: input.run, runtimeJson, credentials } };
}

/** The hand-out of one bound Run. */
export function createBindingHandout(input: BindingHandoutInput): BindingHandout {
  return {
    take: async () => (claim(input.givenMarker) ? readBinding(input) : { ok: false, code: "binding-given" }),
  };
}
