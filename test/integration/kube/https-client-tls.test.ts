// The node:https client's one secure context per pool, against the real API server: it verifies the server with the
// kubeconfig's CA and shows its client certificate, on every new connection of the pool, and refuses a server its CA
// did not sign.
import { describe, expect, it } from "vitest";
import { issueCertificate } from "../../../src/controller/admission/x509.ts";
import { createHttpsKubeClient } from "../../../src/kube/https-client.ts";
import { readKubeconfigFile, type KubeAccess } from "../../../src/kube/kubeconfig.ts";
import { testCluster } from "../harness/index.ts";

function access(): KubeAccess {
  const read = readKubeconfigFile(testCluster().kubeconfigPath);
  if (!read.ok) throw new Error(`the test kubeconfig needs ${read.needsLibrary}`);
  return read.access;
}

describe("the node:https client's TLS", () => {
  it("verifies the server and authenticates with the client certificate on each of many connections", async () => {
    const client = createHttpsKubeClient(access);
    // 24 requests at once: the pool opens that many connections, each from the one secure context.
    const answers = await Promise.all(Array.from({ length: 24 }, () => client.request<{ kind: string }>("GET", "/api/v1/namespaces/default")));
    expect(answers.every((a) => a.kind === "Namespace")).toBe(true);
    // Reading a namespace needs an identity: the admin's certificate was shown, not an anonymous request.
    const review = await client.request<{ status: { userInfo: { username?: string } } }>("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(review.status.userInfo.username).toBe("leviath-admin");
  });

  it("refuses a server its CA did not sign", async () => {
    const other = issueCertificate({ commonName: "someone-else", notBeforeMs: Date.now() - 60_000, notAfterMs: Date.now() + 3_600_000 });
    const client = createHttpsKubeClient(() => ({ ...access(), ca: Buffer.from(other.certPem) }));
    await expect(client.request("GET", "/api/v1/namespaces/default")).rejects.toThrow(/certificate|self.signed|unable to verify/i);
  });
});
