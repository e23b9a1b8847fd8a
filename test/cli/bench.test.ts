// `npm run bench` is never part of `npm test`; this keeps its runner and the decision suite from rotting: the
// suite runs for real with few iterations, writes its JSON elsewhere, checks every row's decision itself and
// cleans its trees up.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repo } from "./run-cli.ts";

const out = mkdtempSync(join(tmpdir(), "leviath-bench-test-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function bench(args: string[]) {
  return spawnSync(process.execPath, [repo("bench/run.ts"), ...args], { cwd: repo(""), encoding: "utf8", timeout: 120_000 });
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)).map((f) => `${e.name}/${f}`) : [e.name]));
}

/** A cited record name with its `{a,b}` alternatives written out. */
function expandBraces(name: string): string[] {
  const m = /\{([^}]*)\}/.exec(name);
  return m ? m[1]!.split(",").flatMap((alt) => expandBraces(name.replace(m[0], alt))) : [name];
}

// The committed records and the docs that cite them: each suite's current record under its own name, every earlier one
// under history/<date of its run>/ and read in the history page, and no citation of a record that is not there.
describe("the records in bench/results", () => {
  const results = repo("bench/results");
  const current = readdirSync(results).filter((f) => f.endsWith(".json")).sort();
  const history = filesUnder(join(results, "history"));
  const reference = readFileSync(repo("docs/benchmarks.md"), "utf8");
  const log = readFileSync(repo("docs/benchmarks-history.md"), "utf8");

  it("are each suite's current record at the top, every earlier one under history/<date of its run>/", () => {
    for (const f of current) expect(f, "a record is named by its suite, not by a pass").not.toMatch(/-(first|second|third|fourth|rerun|before|after)\.json$/);
    for (const f of history) {
      expect(f).toMatch(/^\d{4}-\d{2}-\d{2}\/[\w.-]+\.json$/);
      const record = JSON.parse(readFileSync(join(results, "history", f), "utf8")) as { startedAt: string };
      expect(record.startedAt.slice(0, 10), f).toBe(f.slice(0, 10));
    }
  });

  it("are the ones docs/benchmarks.md's table lists, and every record the docs cite exists", () => {
    const table = reference.slice(reference.indexOf("## The records"), reference.indexOf("## Machine and conditions"));
    expect([...table.matchAll(/^\| `([\w.-]+\.json)` \|/gm)].map((m) => m[1]).sort()).toEqual(current);
    const cited = [...`${reference}\n${log}`.matchAll(/`(?:bench\/results\/)?(history\/[^`\s]+\.json)`|bench\/results\/([^`\s)<]+\.json)/g)].flatMap((m) => expandBraces(m[1] ?? m[2]!));
    expect(cited.length).toBeGreaterThan(40);
    const exists = (name: string) => (name.includes("*") ? history.some((f) => new RegExp(`^${name.replace(/^history\//, "").replace(/[.]/g, "\\.").replace(/\*/g, "[^/]*")}$`).test(f)) : existsSync(join(results, name)));
    expect(cited.filter((name) => !exists(name))).toEqual([]);
  });

  it("under history/ are each read in docs/benchmarks-history.md", () => {
    expect(history.length).toBeGreaterThan(0);
    expect(history.filter((f) => !log.includes(`history/${f}`))).toEqual([]);
  });
});

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

  // The committed record behind docs/benchmarks.md's peers tables: its structure, not its figures.
  it("prints the committed peers record's tables, both halves, interleaved repetitions, without building anything", () => {
    const file = repo("bench/results/peers.json");
    const record = JSON.parse(readFileSync(file, "utf8")) as { options: { reps: number }; controller: { batches: { controller: string; rep: number }[] }; sidecar: { samples: { name: string; rep: number }[] } };
    const reps = record.options.reps;
    expect(reps).toBeGreaterThanOrEqual(3);
    // Both controllers in every repetition, agent-sandbox first in odd ones and ours first in even ones.
    expect(record.controller.batches.map((b) => `${b.rep}:${b.controller}`)).toEqual(Array.from({ length: reps }, (_, rep) => rep % 2 === 0 ? [`${rep}:agent-sandbox`, `${rep}:leviath`] : [`${rep}:leviath`, `${rep}:agent-sandbox`]).flat());
    const servers = [...new Set(record.sidecar.samples.map((s) => s.name))];
    expect(servers).toHaveLength(6);
    for (const name of servers) expect(record.sidecar.samples.filter((s) => s.name === name).map((s) => s.rep).sort()).toEqual(Array.from({ length: reps }, (_, i) => i));
    const r = bench(["peers", "--report", file, "--before", file]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain("peers-bin");
    for (const row of ["created → first Pod, p50", "created → first Pod, p99", "controller CPU per child written", "RSS, after repetition 1 (201 objects each)", "| read_file, before |", "| http_post, after |", "Floors: sidecar http_post p50 is", "| Run → first Pod p50 vs Sandbox → Pod | ≤ 2× |", "| sidecar http_post p99.9 at 1,000/s vs the fastify floor's | ≤ 1.2× |", "| sidecar peak RSS | ≤ 128 MiB |"]) expect(r.stdout).toContain(row);
    for (const name of servers) expect(r.stdout).toContain(`| ${name} |`);
    // A record's own ratio printed as its own "before" is the same figure.
    const p50 = /\| created → first Pod, p50 \| [^|]+ \| [^|]+ \| ([0-9.]+×) \| ([0-9.]+×) \|/.exec(r.stdout);
    expect(p50?.[1]).toBe(p50?.[2]);
  });

  it("refuses a peers record that lacks what its tables read, naming the field", () => {
    const file = join(out, "broken-peers.json");
    const record = JSON.parse(readFileSync(repo("bench/results/peers.json"), "utf8")) as { controller: { batches: { firstPod?: unknown }[] } };
    delete record.controller.batches[1]!.firstPod;
    writeFileSync(file, JSON.stringify(record));
    const r = bench(["peers", "--report", file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`peers: ${file} is not a peers record: controller.batches.1.firstPod:`);
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
