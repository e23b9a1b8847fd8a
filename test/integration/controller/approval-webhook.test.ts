// The pending prompt's webhook through the real operator against the real API server (issue 43): a Run's sidecar
// reports a prompt in status.pendingApprovals (written as the sidecar writes it); the Run controller posts one
// signed notice of it to a local receiver over real HTTP, retried after the receiver's 500; later passes over the
// same Run (a second prompt reported) send the new prompt's notice only, never the first one's again.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIDECAR_FIELD_MANAGER } from "../../../src/api/constants.ts";
import { ApprovalNotifier, SIGNATURE_HEADER, verifySignature, type PendingNotice } from "../../../src/controller/approval/approval-webhook.ts";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, uniqueName, waitFor } from "../harness/index.ts";
import { createAgent, createRun, readCustom, startTestOperator, TEST_RUNTIME_IMAGE, type TestOperator } from "./operator-harness.ts";

const key = Buffer.from(uniqueName("hmac-key-of-at-least-32-bytes-").padEnd(40, "x"));
const RUN = "paged";
let namespace = "";
let op: TestOperator | undefined;
let receiver: Server | undefined;
const got: { headers: IncomingHttpHeaders; body: string; status: number }[] = [];

beforeAll(async () => {
  let first = true;
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      // The receiver fails the first request it gets: the notice must come again.
      const status = first ? 500 : 200;
      first = false;
      got.push({ headers: req.headers, body, status });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/notify`;
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("paged");
  op = await startTestOperator({}, { approvalNotifier: new ApprovalNotifier({ url, key, baseDelayMs: 50 }) });
  await createAgent(namespace, "host", { image: TEST_RUNTIME_IMAGE, sandbox: { kind: "none" }, stages: [{ name: "main" }] });
  await createRun(namespace, RUN, { agentRef: { name: "host" } });
});

afterAll(async () => {
  await op?.stop();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  if (namespace) await deleteNamespace(namespace);
});

/** The sidecar's report of its pending prompts, written as the sidecar writes the Run's status. */
async function reportPending(ids: string[]): Promise<void> {
  const pendingApprovals = ids.map((id) => ({ id, kind: "tool_approval", tool: "shell", target: "make deploy", stage: "main", prompt: "Allow shell command: make deploy", raisedAt: "2026-12-07T03:00:00Z" }));
  const body = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUN, namespace }, status: { pendingApprovals } };
  await kubectl(["apply", "--server-side", `--field-manager=${SIDECAR_FIELD_MANAGER}`, "--subresource=status", "-f", "-"], { input: JSON.stringify(body) });
}

/** The notices about this file's Run (other files' operators may share the cluster, not this receiver). */
const ours = () => got.filter((g) => (JSON.parse(g.body) as PendingNotice).run.namespace === namespace);

describe("the approval webhook through the operator", () => {
  it("notifies a reported prompt once, signed, retried after a 500; a second prompt is its own notice, the first is not sent again", async () => {
    const uid = (await readCustom("runs", namespace, RUN)).metadata?.uid;
    await reportPending(["tool-1"]);
    await waitFor(async () => (ours().some((g) => g.status === 200) ? true : undefined), { description: "the first notice taken" });
    expect(ours().map((g) => g.status)).toEqual([500, 200]);
    for (const g of ours()) expect(verifySignature(key, g.body, g.headers[SIGNATURE_HEADER] as string)).toBe(true);
    expect(JSON.parse(ours()[1]!.body)).toMatchObject({
      type: "approval.pending", delivery: `${uid}/tool-1`, run: { namespace, name: RUN, uid },
      approval: { id: "tool-1", tool: "shell", target: "make deploy" }, approve: `kubectl leviath approve ${RUN} tool-1 -n ${namespace} --once`,
    });

    await reportPending(["tool-1", "tool-2"]);
    await waitFor(async () => (ours().some((g) => g.body.includes('"id":"tool-2"')) ? true : undefined), { description: "the second prompt's notice" });
    // The passes over the Run the second report caused (and the operator's own status writes) did not send the first again.
    expect(ours().map((g) => (JSON.parse(g.body) as PendingNotice).approval.id)).toEqual(["tool-1", "tool-1", "tool-2"]);
  });
});
