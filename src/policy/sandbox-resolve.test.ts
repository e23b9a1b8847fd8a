import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../api/agent.ts";
import type { SandboxBlock } from "../api/common.ts";
import type { PolicySandbox } from "../api/leviath-policy.ts";
import { HOST_DEFAULT, resolveSandbox, resolveStageSandboxes, resolveTaintTracking } from "./sandbox-resolve.ts";

const floor = (p: PolicySandbox) => p;
const bp = (b: SandboxBlock) => b;

describe("resolveSandbox (tighten only)", () => {
  it("gives the host default when nothing is configured", () => {
    expect(resolveSandbox(undefined, undefined, undefined)).toEqual(HOST_DEFAULT);
  });

  it("lets a blueprint opt in when the admin configured nothing, dropping the engine", () => {
    const r = resolveSandbox(undefined, bp({ kind: "container", image: "alpine:3", engine: "/tmp/payload", network: false }), undefined);
    expect(r).toMatchObject({ kind: "container", image: "alpine:3", network: false, source: "blueprint" });
    expect(r).not.toHaveProperty("engine");
  });

  it("never lets a blueprint move down the ladder", () => {
    const user = floor({ kind: "gvisor", runtimeClasses: { gvisor: "runsc" } });
    expect(resolveSandbox(user, bp({ kind: "container" }), undefined)).toMatchObject({ kind: "gvisor", runtimeClassName: "runsc" });
    expect(resolveSandbox(floor({ kind: "container" }), bp({ kind: "namespace" }), undefined).kind).toBe("container");
  });

  it("lets a blueprint move up the ladder, mapping the kind to the admin's runtime class", () => {
    const r = resolveSandbox(floor({ kind: "container", runtimeClasses: { microvm: "kata" } }), bp({ kind: "microvm" }), undefined);
    expect(r).toMatchObject({ kind: "microvm", runtimeClassName: "kata", source: "clamped" });
  });

  it("replaces an opt-out block with the admin's floor", () => {
    const user = floor({ kind: "container", image: "corp/base", network: false });
    expect(resolveSandbox(user, bp({ kind: "none" }), undefined)).toMatchObject({ kind: "container", image: "corp/base", network: false, source: "policy" });
  });

  it("treats a block without kind as none: the admin's active floor still applies", () => {
    expect(resolveSandbox(undefined, bp({ kind: "container" }), bp({ network: false })).kind).toBe("none");
    expect(resolveSandbox(floor({ kind: "container" }), bp({ kind: "container" }), bp({ network: false })).kind).toBe("container");
  });

  it("turns the network off when either side says false", () => {
    expect(resolveSandbox(floor({ kind: "container", network: false }), bp({ kind: "container", network: true }), undefined).network).toBe(false);
    expect(resolveSandbox(floor({ kind: "container", network: true }), bp({ kind: "container", network: false }), undefined).network).toBe(false);
  });

  it("intersects mounts and lets the admin's image win", () => {
    const user = floor({ kind: "container", image: "corp/base", mounts: [{ path: "/opt/tools", readOnly: true }] });
    const r = resolveSandbox(user, bp({ kind: "container", image: "alpine:3", mounts: ["/opt/tools", "/home/you"] }), undefined);
    expect(r.mounts).toEqual(["/opt/tools"]);
    expect(r.image).toBe("corp/base");
  });

  it("keeps the admin's onUnavailable when both sides isolate", () => {
    const r = resolveSandbox(floor({ kind: "container", onUnavailable: "error" }), bp({ kind: "container", onUnavailable: "warn" }), undefined);
    expect(r.onUnavailable).toBe("error");
  });

  it("replaces the agent block whole with a stage block (no inheritance)", () => {
    const spec = AgentSpecSchema.parse({
      sandbox: { kind: "container", image: "debian:bookworm-slim", network: false },
      stages: [{ name: "discover", sandbox: { kind: "none" } }, { name: "build", sandbox: { kind: "container", image: "node:22-slim" } }, { name: "ship" }],
    });
    const r = resolveStageSandboxes(spec, undefined);
    expect(r.map((s) => [s.stage, s.sandbox.kind, s.sandbox.image, s.sandbox.network])).toEqual([
      ["discover", "none", undefined, true],
      ["build", "container", "node:22-slim", true],
      ["ship", "container", "debian:bookworm-slim", false],
    ]);
  });

  it("resolves upstream's synthesised main stage when none is declared", () => {
    const spec = AgentSpecSchema.parse({ sandbox: { kind: "container", image: "x" } });
    expect(resolveStageSandboxes(spec, undefined).map((s) => s.stage)).toEqual(["main"]);
  });
});

describe("resolveTaintTracking (on only)", () => {
  it.each([
    [false, undefined, false],
    [false, {}, true],
    [false, { taintTracking: false }, false],
    [true, { taintTracking: false }, true],
    [false, { taintTracking: true }, true],
  ])("global %s with blueprint %j gives %s", (global, security, expected) => {
    const spec = AgentSpecSchema.parse(security === undefined ? {} : { security });
    expect(resolveTaintTracking(spec, global)).toBe(expected);
  });
});
