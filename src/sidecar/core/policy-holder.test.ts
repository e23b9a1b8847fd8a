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
