import { describe, expect, it } from "vitest";
import { RunPolicySchema, type RunPolicy } from "../../api/run-policy.ts";
import { PolicyHolder } from "./policy-holder.ts";

// A reload reaches the hooks first, then every part that follows the holder (the gateway, the resume record); a
// load that fails reaches neither and keeps the last good policy.
const sandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };
const policyNamed = (name: string): RunPolicy => RunPolicySchema.parse({
  agent: { key: `ns/${name}`, name }, stages: [{ name: "one", sandbox }], entryStage: "one",
  launch: { mode: "interactive", allow: [] }, toolPermissions: { blueprint: {}, ceiling: {}, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false }, taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 0, shellTimeoutSeconds: 60 },
});

describe("PolicyHolder reload listeners", () => {
  it("hears each policy a reload puts in force, after the hooks, and nothing of a failed load", () => {
    let version = "1";
    let fails = false;
    const source = {
      description: "test", fingerprint: () => version,
      load: () => (fails ? { ok: false as const, error: "broken" } : { ok: true as const, value: policyNamed(`app${version}`), warnings: [] }),
    };
    const heard: string[] = [];
    const opened = PolicyHolder.open(source, { workdir: "/work", home: undefined }, {
      loaded: (enf, _w, initial) => heard.push(`hook ${enf.runPolicy.agent.name}${initial ? " initial" : ""}`),
      failed: (error) => heard.push(`failed ${error}`),
    });
    if (!opened.ok) throw new Error(opened.error);
    opened.holder.onReload((enf) => heard.push(`listener ${enf.runPolicy.agent.name}`));
    expect(opened.holder.check()).toBe("unchanged");
    version = "2";
    expect(opened.holder.check()).toBe("reloaded");
    version = "3";
    fails = true;
    expect(opened.holder.check()).toBe("failed");
    expect(opened.holder.current().runPolicy.agent.name).toBe("app2");
    expect(heard).toEqual(["hook app1 initial", "hook app2", "listener app2", "failed broken"]);
  });
});

describe("PolicyHolder polling (settle)", () => {
  it("loads a change only once two polls saw the same bytes: a prefix seen once mid-write is never in force", () => {
    let bytes = "full-1";
    const loads: string[] = [];
    const source = {
      description: "config.toml", fingerprint: () => bytes,
      load: () => {
        loads.push(bytes);
        return { ok: true as const, value: policyNamed(bytes), warnings: [] };
      },
    };
    const opened = PolicyHolder.open(source, { workdir: "/work", home: undefined }, { loaded: () => undefined, failed: () => undefined });
    if (!opened.ok) throw new Error(opened.error);
    const { holder } = opened;
    // Rewritten in place: one poll lands between the truncation and the new bytes.
    bytes = "";
    expect(holder.check({ settle: true })).toBe("settling");
    bytes = "full-2";
    expect(holder.check({ settle: true })).toBe("settling");
    expect(holder.current().runPolicy.agent.name).toBe("full-1");
    expect(holder.check({ settle: true })).toBe("reloaded");
    expect(holder.current().runPolicy.agent.name).toBe("full-2");
    // Back to the bytes in force before a second poll: nothing to load, nothing pending.
    bytes = "";
    expect(holder.check({ settle: true })).toBe("settling");
    bytes = "full-2";
    expect(holder.check({ settle: true })).toBe("unchanged");
    expect(holder.check({ settle: true })).toBe("unchanged");
    expect(loads).toEqual(["full-1", "full-2"]);
  });

  it("reloads at once when asked without settling (a snapshot replaced whole)", () => {
    let bytes = "a";
    const source = { description: "snapshot", fingerprint: () => bytes, load: () => ({ ok: true as const, value: policyNamed(bytes), warnings: [] }) };
    const opened = PolicyHolder.open(source, { workdir: "/work", home: undefined }, { loaded: () => undefined, failed: () => undefined });
    if (!opened.ok) throw new Error(opened.error);
    bytes = "b";
    expect(opened.holder.check()).toBe("reloaded");
    expect(opened.holder.current().runPolicy.agent.name).toBe("b");
  });
});
