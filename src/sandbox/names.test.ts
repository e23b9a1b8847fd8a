import { describe, expect, it } from "vitest";
import { computeHash, buildCanonicalJson } from "./hash.ts";
import { buildChildName, buildChildNames, buildLabelValue, buildSandboxPodName } from "./names.ts";
import { computeLiteralRoot } from "../policy/read-paths/entry.ts";
import { computeReadPathVolumes } from "./read-path-volumes.ts";
import { buildSnapshotData, parseSnapshotData, SNAPSHOT_KEY } from "./run-snapshot.ts";
import { snapshotOf } from "./test-fixtures.ts";

describe("names", () => {
  const long = `r${"x".repeat(252)}`;
  it.each([
    ["a short run keeps its name", "digest-1", "engine", "digest-1-engine"],
    ["a long run is shortened with a hash", long, "engine", expect.stringMatching(/^rx+-[0-9a-f]{16}-engine$/)],
  ])("%s", (_n, run, suffix, expected) => {
    const name = buildChildName(run, suffix);
    expect(name).toEqual(expected);
    expect(name.length).toBeLessThanOrEqual(253);
  });

  it("keeps label values within 63 characters and distinct", () => {
    expect(buildLabelValue("digest-1")).toBe("digest-1");
    const a = buildLabelValue(`${"a".repeat(70)}-1`);
    const b = buildLabelValue(`${"a".repeat(70)}-2`);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(a).not.toBe(b);
  });

  it("names every child distinctly", () => {
    const names = buildChildNames("run");
    const pods = [names.enginePod, buildSandboxPodName("run", "0123456789abcdef")];
    expect(new Set([names.configMap, names.workspace, names.networkPolicy, ...pods]).size).toBe(5);
  });
});

/** The BigInt FNV-1a the digest was first computed with: the two-halves version must give the same digests. */
function bigIntFnv(value: unknown): string {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(buildCanonicalJson(value))) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, "0");
}

describe("computeHash", () => {
  it("gives the digests of 64-bit BigInt FNV-1a, so existing pods' spec hashes do not change", () => {
    const values: unknown[] = ["", "a", { a: 1, b: [1, 2, { c: "ü€😀" }] }, null, 0, "x".repeat(1000)];
    for (let i = 0; i < 200; i++) values.push({ i, s: String.fromCharCode(...Array.from({ length: i % 40 }, (_, k) => (i * 31 + k * 7) % 0x2fff)) });
    for (const v of values) expect(computeHash(v), JSON.stringify(v)).toBe(bigIntFnv(v));
  });

  it("writes the canonical text it always wrote (keys in code-unit order, array-index keys too)", () => {
    // The writer the spec hashes of existing pods were made with.
    const reference = (value: unknown): string => {
      if (Array.isArray(value)) return `[${value.map(reference).join(",")}]`;
      if (value !== null && typeof value === "object") {
        const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(",")}}`;
      }
      return JSON.stringify(value ?? null);
    };
    const values: unknown[] = [
      { b: 1, a: [1, { d: 2, c: undefined }, undefined, null], "é": "ü€😀", Z: { "": 0 } },
      { nodeSelector: { "10": "x", "9": "y", a: "z", "01": "w" }, list: [{ "2": 1, "1": 2 }] },
      [[], {}, "", 0, -0, 1e21, 0.1, true, false, null], "plain", 7, null,
      { containers: [{ name: "agent", env: [{ name: "A", value: "\u2028\"quoted\"\n" }], resources: { limits: { cpu: "1" } } }] },
    ];
    for (const v of values) expect(buildCanonicalJson(v), JSON.stringify(v)).toBe(reference(v));
  });

  it("ignores key order and undefined fields, and sees every value", () => {
    expect(buildCanonicalJson({ b: 1, a: [1, { d: 2, c: undefined }] })).toBe('{"a":[1,{"d":2}],"b":1}');
    expect(computeHash({ a: 1, b: 2 })).toBe(computeHash({ b: 2, a: 1 }));
    expect(computeHash({ a: 1 })).not.toBe(computeHash({ a: 2 }));
    expect(computeHash("")).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe("read-path volumes", () => {
  it.each([
    ["/data/x", "/data/x"],
    ["glob:/data/x/**", "/data/x"],
    ["glob:/data/x*/y", "/data"],
    ["regex:/data/[a-z]+", "/data"],
    ["regex:/.*", "/"],
    ["glob:**", undefined],
    ["glob:\\data\\runs\\**", "/data/runs"], // backslashes are / on Linux too (glob-035)
    ["glob:/data/{a,b}/*", "/data/{a,b}"], // no brace expansion: braces are literal
    ["regex:\\data\\.*", undefined], // in a regex the backslash is an escape, not a separator
    ["~/notes", undefined],
  ])("the literal root of %s is %s", (entry, root) => {
    expect(computeLiteralRoot(entry)).toBe(root);
  });

  it("mounts only volumes a grant can reach", () => {
    const volumes = [
      { path: "/shared/design", readOnly: true, volume: { configMap: { name: "d" } } },
      { path: "/shared/finance", readOnly: true, volume: { configMap: { name: "f" } } },
      { path: "/shared/nosource", readOnly: true },
    ];
    expect(computeReadPathVolumes(volumes, ["glob:/shared/design/**"]).map((v) => v.path)).toEqual(["/shared/design"]);
    expect(computeReadPathVolumes(volumes, ["glob:/shared/**"]).map((v) => v.path)).toEqual(["/shared/design", "/shared/finance"]);
    expect(computeReadPathVolumes(volumes, [])).toEqual([]);
    expect(computeReadPathVolumes(volumes, ["glob:\\shared\\design\\**"]).map((v) => v.path)).toEqual(["/shared/design"]);
  });
});

describe("run snapshot", () => {
  it("round-trips through ConfigMap data and pins the generations", () => {
    const snapshot = snapshotOf({ image: "r:1", stages: [{ name: "a" }] }, { security: { taintTracking: true } });
    const parsed = parseSnapshotData(buildSnapshotData(snapshot));
    expect(parsed).toEqual({ ok: true, value: snapshot });
    expect(snapshot.runPolicy.pinned).toEqual({ agentGeneration: 3, policyGeneration: 7 });
    expect(snapshot.controller.policy).toEqual({ name: "cluster", generation: 7 });
  });

  it.each([
    ["missing keys", {}],
    ["not JSON", { [SNAPSHOT_KEY.runPolicy]: "{", [SNAPSHOT_KEY.runtime]: "{}", [SNAPSHOT_KEY.controller]: "{}" }],
  ])("refuses %s", (_n, data) => {
    expect(parseSnapshotData(data).ok).toBe(false);
  });
});
