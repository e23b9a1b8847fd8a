// The kubelet authenticates and authorizes every request (issue 15): no anonymous access, a client
// certificate of the control plane's CA is checked with a SubjectAccessReview, and the API server reaches
// the kubelet with its own client certificate (`--kubelet-client-certificate`, bound to
// `system:kubelet-api-admin`), which is what `kubectl exec` and `logs` ride on.
import { request } from "node:https";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, kubectl } from "../integration/harness/index.ts";
import { buildSandboxPod, execInPod, runPod } from "./harness/sandbox-pod.ts";
import { issueClientCertificate } from "./harness/issue-client-certificate.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const pki = join(dirname(inject("kubeconfig")), "pki");
const scratch = mkdtempSync(join(tmpdir(), "leviath-kubelet-auth-"));

/** GET `path` on the kubelet, optionally with a client certificate; resolves to the HTTP status. */
function kubeletStatus(path: string, client?: { cert: string; key: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1", port: node.kubeletPort, path, method: "GET",
      // The kubelet serves a self-signed certificate; what is under test is how it treats the client.
      rejectUnauthorized: false,
      ...(client ? { cert: readFileSync(client.cert), key: readFileSync(client.key) } : {}),
    }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the kubelet's API", () => {
  it("refuses an anonymous request", async () => {
    expect(await kubeletStatus("/pods")).toBe(401);
  });

  it("authorizes a client certificate with the API server: a user without rights is forbidden, an admin is not", async () => {
    const nobody = await issueClientCertificate(scratch, "nobody", "/CN=leviath-e2e-nobody", join(pki, "ca.crt"), join(pki, "ca.key"));
    expect(await kubeletStatus("/pods", nobody)).toBe(403);
    expect(await kubeletStatus("/pods", { cert: join(pki, "admin.crt"), key: join(pki, "admin.key") })).toBe(200);
  });

  it("is reached by the API server with its own client certificate: exec and logs work", async () => {
    // (The API server's node proxy refuses loopback addresses, so exec and logs are the path to test.)
    const namespace = await createRestrictedNamespace("e2e-kubelet");
    try {
      await runPod(buildSandboxPod({ name: "exec", namespace, image: node.images.sandbox! }));
      const exec = await execInPod(namespace, "exec", "echo through-the-kubelet");
      expect(exec).toMatchObject({ exitCode: 0, stdout: "through-the-kubelet\n" });
      const logs = await kubectl(["logs", "-n", namespace, "exec"]);
      expect(logs.exitCode, logs.stderr).toBe(0);
    } finally {
      await deleteNamespace(namespace);
    }
  });
});
