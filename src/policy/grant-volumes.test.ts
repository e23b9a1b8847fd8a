import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../api/agent.ts";
import { CLUSTER_ADVICE } from "../api/findings.ts";
import { LeviathPolicySpecSchema } from "../api/leviath-policy.ts";
import { computeAgentFindings } from "./agent-findings.ts";
import { computeUnbackedGrantFindings, listPlacedGrants } from "./grant-volumes.ts";
import { computePolicyFindings } from "./policy-findings.ts";

const policy = LeviathPolicySpecSchema.parse({
  readPaths: {
    global: ["/workspace/shared", "docs/**"],
    perAgent: { "ns/a": ["/data/team-notes", "glob:/data/finance/**/*.csv"], "ns/b": ["/srv/other"] },
    volumes: [{ path: "/data/team-notes", volume: { configMap: { name: "team-notes" } } }, { path: "/srv", readOnly: true }],
  },
});

describe("read-path-grant-unbacked", () => {
  it("names every grant no volume with a source reaches; workspace and relative grants need none", () => {
    const f = computeUnbackedGrantFindings(listPlacedGrants(policy.readPaths), policy.readPaths);
    expect(f.map((x) => x.message.split(",")[0])).toEqual([
      `spec.readPaths.perAgent["ns/a"][1] of the LeviathPolicy grants 'glob:/data/finance/**/*.csv'`,
      `spec.readPaths.perAgent["ns/b"][0] of the LeviathPolicy grants '/srv/other'`,
    ]);
    expect(f[0]).toMatchObject({ severity: "warning", code: "read-path-grant-unbacked" });
    expect(f[0]?.message).toContain("no entry of spec.readPaths.volumes mounts anything at /data/finance");
    expect(f[0]?.fix).toBe("add to spec.readPaths.volumes of the LeviathPolicy: - {path: /data/finance, volume: {configMap: {name: <name>}}} (or a persistentVolumeClaim)");
  });

  it("is on an Agent for the grants that would open a path it declares, and never for a config.toml", () => {
    const spec = AgentSpecSchema.parse({ agent: { name: "a" }, readPaths: { allow: ["/data/team-notes", "/data/finance/q3.csv"] }, stages: [{ name: "s", runtime: { model: {} } }] });
    const findings = (advice: typeof CLUSTER_ADVICE) => computeAgentFindings({ spec, name: "a", key: "ns/a", policy, workdir: "/w", home: undefined, advice }).filter((x) => x.code === "read-path-grant-unbacked");
    expect(findings(CLUSTER_ADVICE).map((x) => x.message.split(" of the")[0])).toEqual([`spec.readPaths.perAgent["ns/a"][1]`]);
    expect(findings({ policy: "config.toml", blueprint: "agent.leviath" })).toEqual([]);
    expect(computePolicyFindings(policy, { policy: "config.toml", blueprint: "agent.leviath" })).toEqual([]);
  });
});
