// `npm run bench` is never part of `npm test`; this keeps its runner and the decision suite from rotting: the
// suite runs for real with few iterations, writes its JSON elsewhere, checks every row's decision itself and
// cleans its trees up.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repo } from "./run-cli.ts";

const out = mkdtempSync(join(tmpdir(), "leviath-bench-test-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function bench(args: string[]) {
  return spawnSync(process.execPath, [repo("bench/run.ts"), ...args], { cwd: repo(""), encoding: "utf8", timeout: 120_000 });
}

describe("npm run bench", () => {
  it("names its suites in --help", () => {
    const r = bench(["--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("decision|sidecar|sidecar-memory|controller|scaling|teardown|peers");
  });

  it("refuses a peers run with an unknown --only before building anything", () => {
    const r = bench(["peers", "--only", "everything"]);
    expect(r.stderr).toContain("peers: --only takes controller or sidecar, not 'everything'");
    expect(r.stderr).not.toContain("peers-bin");
    expect(r.status).toBe(1);
  });

  it("refuses an unknown suite by name", () => {
    const r = bench(["decision", "fast"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("unknown suite 'fast'");
  });

  it("runs the decision suite on real trees, records every table and removes its trees", () => {
    const trees = () => readdirSync(tmpdir()).filter((n) => n.startsWith("leviath-bench-") && !n.startsWith("leviath-bench-test-"));
    const before = new Set(trees());
    const r = bench(["decision", "--iterations", "200", "--results-dir", out]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const record = JSON.parse(readFileSync(join(out, "decision.json"), "utf8")) as { options: { iterations: number }; machine: { cores: number }; tables: { title: string; rows: { name: string; n: number; p99: number }[] }[] };
    expect(record.options.iterations).toBe(200);
    expect(record.machine.cores).toBeGreaterThan(0);
    expect(record.tables.map((t) => t.title)).toEqual(["Read-path decisions (resolveRead)", "Permission + taint gate (decideToolCall)", "Whole call in process"]);
    for (const row of record.tables.flatMap((t) => t.rows)) {
      expect(row.n, row.name).toBeGreaterThanOrEqual(200);
      expect(row.p99, row.name).toBeGreaterThan(0);
    }
    expect(trees().filter((n) => !before.has(n))).toEqual([]);
  }, 120_000); // as long as bench() waits: the suite takes 30 s and more on a loaded machine
});
