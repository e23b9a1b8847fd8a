import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readKubeAccess, readKubeconfigFile } from "./kubeconfig.ts";

function write(doc: unknown, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeconfig-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const file = join(dir, "config");
  writeFileSync(file, typeof doc === "string" ? doc : JSON.stringify(doc));
  return file;
}
const base = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}) => ({
  "current-context": "c",
  contexts: [{ name: "other", context: { cluster: "x" } }, { name: "c", context: { cluster: "k", user: "u", namespace: "team" } }],
  clusters: [{ name: "k", cluster: { server: "https://127.0.0.1:6443/", ...cluster } }],
  users: [{ name: "u", user }],
});

describe("readKubeconfigFile", () => {
  it("reads the current context's server, namespace, CA and client certificate, relative paths next to the file", () => {
    const file = write(base({ "client-certificate": "tls.crt", "client-key-data": Buffer.from("KEY").toString("base64") }, { "certificate-authority": "ca.crt" }), { "ca.crt": "CA", "tls.crt": "CERT" });
    const r = readKubeconfigFile(file);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.access.server).toBe("https://127.0.0.1:6443");
    expect(r.access.namespace).toBe("team");
    expect([r.access.ca?.toString(), r.access.cert?.toString(), r.access.key?.toString()]).toEqual(["CA", "CERT", "KEY"]);
    expect(r.access.auth).toEqual({ kind: "none" });
    expect(r.access.insecureSkipTlsVerify).toBe(false);
  });

  it("reads YAML, a bearer token and a token file", () => {
    const yaml = "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: 'https://h:1', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: abc}\n";
    const r = readKubeconfigFile(write(yaml));
    expect(r.ok && r.access.auth).toEqual({ kind: "token", token: "abc" });
    expect(r.ok && r.access.insecureSkipTlsVerify).toBe(true);
    const t = readKubeconfigFile(write(base({ tokenFile: "token" })));
    expect(t.ok && t.access.auth).toMatchObject({ kind: "tokenFile", file: expect.stringMatching(/\/token$/) });
  });

  it("reads a YAML flow mapping that only looks like JSON with the YAML parser", () => {
    const flow = "{current-context: c, contexts: [{name: c, context: {cluster: k}}], clusters: [{name: k, cluster: {server: 'https://h:2'}}]}\n";
    const r = readKubeconfigFile(write(flow));
    expect(r.ok && r.access.server).toBe("https://h:2");
    expect(() => readKubeconfigFile(write("{current-context: [\n"))).toThrow();
  });

  it("leaves plugin credentials and proxies to the library", () => {
    expect(readKubeconfigFile(write(base({ exec: { command: "aws" } })))).toEqual({ ok: false, needsLibrary: "user 'u' authenticates with a plugin" });
    expect(readKubeconfigFile(write(base({ "auth-provider": { name: "oidc" } }))).ok).toBe(false);
    expect(readKubeconfigFile(write(base({}, { "proxy-url": "http://proxy:3128" }))).ok).toBe(false);
  });

  it("names what is missing or unreadable", () => {
    expect(() => readKubeconfigFile(write({ ...base({}), "current-context": "nope" }))).toThrow(/has no context 'nope'/);
    expect(() => readKubeconfigFile(write({ ...base({}), clusters: [] }))).toThrow(/names cluster 'k', which it does not define/);
    expect(() => readKubeconfigFile(write(base({ "client-certificate": "missing.crt" })))).toThrow(/client-certificate .*missing\.crt/);
    expect(() => readKubeconfigFile(write({ clusters: "x" }))).toThrow(/kubeconfig .*: clusters:/);
  });
});

describe("readKubeAccess", () => {
  it("says so when nothing is configured", () => {
    expect(() => readKubeAccess(undefined, { HOME: mkdtempSync(join(tmpdir(), "home-")) })).toThrow(/no Kubernetes cluster configured/);
  });
});
