// What every suite records besides its figures: the machine, the load on it before and after, and where the
// JSON goes. One file per suite, `bench/results/<suite>.json`, overwritten by each run: the committed file is
// the record behind docs/benchmarks.md, and git history keeps the earlier runs.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LatencySummary, Row } from "./bench-stats.ts";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Where the suites write their JSON. */
export const RESULTS_DIR = join(ROOT, "bench", "results");

/** The machine a run was on. */
export interface MachineInfo {
  readonly cores: number;
  readonly cpuModel: string;
  readonly node: string;
  readonly kernel: string;
  readonly memoryMiB: number;
  /** The CPUs this process may run on (children inherit it): all of them, unless something pinned the shell. */
  readonly cpusAllowed: string;
}

/** Describes this machine. */
export function describeMachine(): MachineInfo {
  const list = cpus();
  return { cores: list.length, cpuModel: list[0]?.model ?? "unknown", node: process.version, kernel: release(), memoryMiB: Math.round(totalmem() / 2 ** 20), cpusAllowed: readCpusAllowed() };
}

/** This process's allowed CPUs, from /proc (Linux). */
export function readCpusAllowed(pid: number | "self" = "self"): string {
  try {
    return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "?";
  } catch {
    return "?";
  }
}

/** The 1, 5 and 15 minute load averages, rounded. */
export function readLoad(): [number, number, number] {
  const [a, b, c] = loadavg();
  return [a, b, c].map((x) => Math.round((x ?? 0) * 100) / 100) as [number, number, number];
}

/** A table as stored in JSON: latencies in microseconds. */
export interface StoredTable {
  readonly title: string;
  readonly rows: readonly (Omit<Row, "summary"> & LatencySummary)[];
}

/** Flattens printed rows for the JSON record. */
export function storeTable(title: string, rows: readonly Row[]): StoredTable {
  return { title, rows: rows.map(({ summary, ...rest }) => ({ ...rest, ...summary })) };
}

/** Records one suite run: start it first, add tables, then `write` at the end. */
export class SuiteRecord {
  readonly suite: string;
  readonly startedAt = new Date();
  readonly loadBefore = readLoad();
  readonly tables: StoredTable[] = [];
  readonly extra: Record<string, unknown> = {};
  readonly options: Record<string, unknown>;

  constructor(suite: string, options: Record<string, unknown>) {
    this.suite = suite;
    this.options = options;
    const allowed = readCpusAllowed();
    process.stdout.write(`${suite} bench: node ${process.version}, ${cpus().length} cores (this process may use CPUs ${allowed}), load average ${this.loadBefore.join(" ")} before, ${this.startedAt.toISOString()}\n`);
    if (allowed !== `0-${cpus().length - 1}` && cpus().length > 1) process.stdout.write(`warning: this process is pinned to CPUs ${allowed}: the figures will not be those of the whole machine\n`);
  }

  /** Keeps a printed table. */
  add(title: string, rows: readonly Row[]): void {
    this.tables.push(storeTable(title, rows));
  }

  /** Writes `<suite>.json` into `--results-dir` (default `bench/results/`) and returns its path. */
  write(): string {
    const finishedAt = new Date();
    const loadAfter = readLoad();
    const record = {
      suite: this.suite,
      startedAt: this.startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationSeconds: Math.round((finishedAt.getTime() - this.startedAt.getTime()) / 100) / 10,
      machine: describeMachine(),
      load: { before: this.loadBefore, after: loadAfter },
      options: this.options,
      tables: this.tables,
      ...this.extra,
    };
    const dir = flagValue("results-dir", RESULTS_DIR);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${this.suite}.json`);
    writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`);
    process.stdout.write(`\n${this.suite}: load average ${loadAfter.join(" ")} after; ${record.durationSeconds} s; results in ${path}\n`);
    return path;
  }
}

/** A flag's value from argv (`--name value`), or the fallback. */
export function flagValue(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : (process.argv[i + 1] ?? fallback);
}

/** A positive number flag. */
export function numberFlag(name: string, fallback: number): number {
  const n = Number(flagValue(name, String(fallback)));
  if (!(n > 0)) throw new Error(`--${name} needs a positive number`);
  return n;
}
