import { describe, expect, it } from "vitest";
import { leviath } from "./run-cli.ts";

// `leviath controller` checks its flags before it reads a kubeconfig: a bad one is a usage error naming the flag.
describe("leviath controller flags", () => {
  it.each([
    [["--metrics-bind-address", "8080"], "--metrics-bind-address '8080' is not host:port"],
    [["--health-probe-bind-address", "0.0.0.0:70000"], "--health-probe-bind-address '0.0.0.0:70000' is not host:port"],
    [["--log-level", "loud"], "--log-level 'loud' is not one of"],
    [["--workers", "0"], "--workers: '0' is not an integer from 1 to 64"],
    [["--approval-ttl", "soon"], "--approval-ttl: 'soon' is not a positive number of seconds"],
    [["--webhook-secret", "ns/tls"], "--webhook-secret needs --webhook-bind-address"],
    [["--webhook-bind-address", ":9443"], "--webhook-secret '' is not NAMESPACE/NAME"],
    [["--webhook-bind-address", ":9443", "--webhook-secret", "ns/tls"], "--webhook-hosts: the serving certificate needs at least one DNS name or IP"],
    [["--webhook-bind-address", ":9443", "--webhook-secret", "ns/tls", "--webhook-cert-dir", "/tls"], "--webhook-cert-dir and --webhook-secret exclude each other"],
    [["--approval-webhook-url", "https://hooks.example/x"], "--approval-webhook-url and --approval-webhook-secret-file go together"],
    [["--approval-webhook-url", "ftp://hooks.example/x", "--approval-webhook-secret-file", "/nonexistent"], "--approval-webhook-url: 'ftp://hooks.example/x' is not an http or https URL"],
    [["--approval-webhook-url", "https://hooks.example/x", "--approval-webhook-secret-file", "/nonexistent/key"], "--approval-webhook-secret-file: cannot read /nonexistent/key: ENOENT"],
    [["--approval-webhook-url", "https://hooks.example/x", "--approval-webhook-secret-file", "/etc/hostname"], "fewer than 32"],
  ])("refuses %j", (args, message) => {
    const r = leviath(["controller", "--kubeconfig", "/nonexistent/kubeconfig", ...args]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
  });
});

describe("leviath controller --help", () => {
  it("lists the webhook's flags and the Approval TTL with its default", () => {
    const r = leviath(["controller", "--help"]);
    expect(r.status).toBe(0);
    for (const flag of ["--webhook-bind-address", "--webhook-cert-dir", "--webhook-secret", "--webhook-configuration", "--webhook-hosts"]) expect(r.stdout).toContain(flag);
    expect(r.stdout).toMatch(/--approval-ttl SECONDS[\s\S]*\(default 3600\)/);
    expect(r.stdout).toMatch(/--approval-webhook-secret-file FILE[\s\S]*X-Leviath-Signature-256: sha256=<hex>/);
  });
});
