import { spawn } from "node:child_process";
import { createServer, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { buildProbeClientScript, buildProbeNames, buildProbeServerScript, buildProbePod, buildProbePolicy, decideProbeVerdict, PROBE_LABEL, PROBE_ROLE_LABEL } from "./network-probe.ts";
import { DEFAULT_POD_SETTINGS } from "./pod-settings.ts";

describe("the network probe", () => {
  it("puts only its own closed client under the deny-all policy", () => {
    const policy = buildProbePolicy("abc", "probes");
    expect(policy.metadata).toMatchObject({ name: "leviath-netprobe-abc-deny", namespace: "probes" });
    expect(policy.spec).toEqual({ podSelector: { matchLabels: { [PROBE_LABEL]: "abc", [PROBE_ROLE_LABEL]: "closed" } }, policyTypes: ["Ingress", "Egress"] });
    const closed = buildProbePod({ id: "abc", namespace: "probes", role: "closed", settings: DEFAULT_POD_SETTINGS, target: "10.0.0.7", nodeName: "n1" });
    const open = buildProbePod({ id: "abc", namespace: "probes", role: "open", settings: DEFAULT_POD_SETTINGS, target: "10.0.0.7" });
    expect(closed.metadata.labels).toMatchObject({ [PROBE_LABEL]: "abc", [PROBE_ROLE_LABEL]: "closed" });
    expect(open.metadata.labels?.[PROBE_ROLE_LABEL]).toBe("open");
    expect(closed.metadata.name).toBe(buildProbeNames("abc").closed);
  });

  it("runs with the sandbox pods' restricted settings, the operator's image and no token", () => {
    const pod = buildProbePod({ id: "abc", namespace: "probes", role: "closed", settings: DEFAULT_POD_SETTINGS, target: "10.0.0.7", nodeName: "n1" });
    const spec = pod.spec as { automountServiceAccountToken: boolean; restartPolicy: string; nodeName: string; securityContext: Record<string, unknown>; containers: { image: string; env: unknown; securityContext: Record<string, unknown> }[] };
    expect(spec).toMatchObject({ automountServiceAccountToken: false, restartPolicy: "Never", nodeName: "n1" });
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(spec.containers[0]!.image).toBe(DEFAULT_POD_SETTINGS.sidecarImage);
    expect(spec.containers[0]!.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    expect(spec.containers[0]!.env).toEqual([{ name: "PROBE_TARGET", value: "10.0.0.7" }]);
  });

  it.each([
    ["connected", "refused", "Verified"],
    ["connected", "connected", "NotEnforced"],
    ["refused", "refused", "Unknown"],
    ["refused", "connected", "Unknown"],
    ["pending", "refused", "Unknown"],
    ["connected", "pending", "Unknown"],
  ] as const)("open %s, closed %s: %s", (open, closed, state) => {
    expect(decideProbeVerdict(open, closed).state).toBe(state);
  });

  describe("the client's program, run by node against a real socket", () => {
    /** Runs the client script against 127.0.0.1:`port` and resolves with its exit code. */
    const runClient = (port: number, retryMs: number) => new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ["-e", buildProbeClientScript(port, 0, retryMs)], { env: { PROBE_TARGET: "127.0.0.1" }, stdio: "ignore" });
      child.on("exit", (code) => resolve(code));
    });
    const freePort = () => new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });

    it("connects to a server that starts listening only after its first attempts (exit 0)", async () => {
      const port = await freePort();
      const server = createServer((c) => {
        c.on("error", () => undefined);
        c.end("ok");
      });
      const exited = runClient(port, 6000);
      await new Promise((r) => setTimeout(r, 2500));
      await new Promise<void>((r) => server.listen(port, "127.0.0.1", () => r()));
      try {
        expect(await exited).toBe(0);
      } finally {
        server.close();
      }
    });

    it("against the server's program: a client that resets its connection leaves the server serving the next one", async () => {
      const port = await freePort();
      const server = spawn(process.execPath, ["-e", buildProbeServerScript(port)], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      server.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      try {
        // Connected clients exit at once (as the probe's do), resetting their connections; each must find the server.
        for (let i = 0; i < 3; i++) expect(await runClient(port, 5000)).toBe(0);
        expect(server.exitCode).toBeNull();
        expect(stderr).toBe("");
      } finally {
        server.kill();
      }
    });

    it("gives up once its retry window is over when nothing ever listens (exit 1)", async () => {
      expect(await runClient(await freePort(), 2000)).toBe(1);
    });
  });
});
