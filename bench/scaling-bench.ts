// Suite `scaling` (DESIGN.md §7; issue 7 item 4): how the decisions grow with the number of entries, and how the
// Run latency grows with the number of Runs cached. The first is measured here, in process: read-path entries
// (10, 100, 1,000, mixing exact, glob and regex, with and without realpath), allowlist rules and CEL rules. The
// second needs the real API server, so the `controller` suite measures it (100 Runs timed at 1, 5,000 and 10,000
// Runs cached) and this suite prints that curve from bench/results/controller.json.
// Run with: node bench/scaling-bench.ts
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { EMPTY_RULE_SET } from "../src/policy/cel-rules.ts";
import { compileRules } from "../src/policy/cel-library.ts";
import type { AllowlistRule } from "../src/policy/allowlist.ts";
import { resolveRead } from "../src/policy/read-paths/index.ts";
import { RESULTS_DIR, SuiteRecord } from "./bench-results.ts";
import { formatMicros, measureRate, printTable, summarize, timeEach, type Row } from "./bench-stats.ts";
import { buildEntryTree } from "./bench-tree.ts";
import { entryContext, expectDecision, gateCall, LEXICAL_FS, REAL_FS } from "./decision-bench.ts";

const SIZES = [10, 100, 1000];

function readPathRows(): Row[] {
  const rows: Row[] = [];
  for (const n of SIZES) {
    const tree = buildEntryTree(n, 1, 5);
    try {
      // Fewer iterations where one decision costs milliseconds, so the suite stays within minutes.
      const iterations = n >= 1000 ? 2000 : 20_000;
      for (const [label, fs] of [["realpath", REAL_FS], ["lexical", LEXICAL_FS]] as const) {
        const ctx = entryContext(tree, tree.entries, fs);
        expectDecision(tree.files[0]!, ctx, "allowed");
        expectDecision(tree.undeclared[0]!, ctx, "not-declared");
        const granted = (i: number) => resolveRead(tree.files[i % tree.files.length]!, ctx);
        const refused = (i: number) => resolveRead(tree.undeclared[i % tree.undeclared.length]!, ctx);
        const kinds = `${tree.kinds.exact} exact, ${tree.kinds.glob} glob, ${tree.kinds.regex} regex`;
        rows.push({ name: `${n} entries, granted, any file (${label})`, summary: summarize(timeEach(iterations, granted)), perSecond: measureRate(1000, granted), target: fs === REAL_FS ? "p99 ≤ 50 µs" : "", note: kinds });
        rows.push({ name: `${n} entries, refused, not declared (${label})`, summary: summarize(timeEach(iterations, refused)), perSecond: measureRate(1000, refused), target: fs === REAL_FS ? "p99 ≤ 50 µs" : "", note: "every entry tried" });
      }
    } finally {
      rmSync(tree.root, { recursive: true, force: true });
    }
  }
  return rows;
}

function gateRows(): Row[] {
  const rows: Row[] = [];
  for (const n of SIZES) {
    // No rule matches: the gate walks the whole allowlist, then builds the prompt.
    const allowlist: AllowlistRule[] = Array.from({ length: n }, (_, i) => ({ tool: i % 2 ? "http_post" : "send_email", to: [`*.site${i}.example`], channel: [], maxSensitivity: "private" }));
    const fn = gateCall(allowlist, EMPTY_RULE_SET, "http_post", "evil.example.net");
    rows.push({ name: `${n} allowlist rules, none matches`, summary: summarize(timeEach(20_000, fn)), perSecond: measureRate(1000, fn), target: "p99 ≤ 50 µs" });
  }
  for (const n of [1, 10, 100]) {
    const rules = compileRules(Array.from({ length: n }, (_, i) => ({ name: `r${String(i).padStart(3, "0")}`, source: `tool == "http_post" && target == "hooks${i}.example.com"` })));
    const fn = gateCall([], rules, "http_post", "evil.example.net");
    rows.push({ name: `${n} CEL rules, none matches`, summary: summarize(timeEach(n >= 100 ? 5000 : 20_000, fn)), perSecond: measureRate(1000, fn), target: "p99 ≤ 50 µs" });
  }
  return rows;
}

/** The controller suite's Run latency against Runs cached, from its last JSON, as table lines. */
function controllerCurve(): string[] {
  const path = join(RESULTS_DIR, "controller.json");
  if (!existsSync(path)) return ["(no bench/results/controller.json yet: run `npm run bench -- controller`)"];
  const data = JSON.parse(readFileSync(path, "utf8")) as { startedAt: string; batches: { label: string; cachedBefore: number; latency: { p50: number; p99: number }; reconcileMeanMs: number }[] };
  const lines = [`From the controller suite of ${data.startedAt}:`, "", "| Runs cached before | batch | p50 | p99 | reconcile pass mean |", "|---|---|---|---|---|"];
  for (const b of data.batches) lines.push(`| ${b.cachedBefore.toLocaleString("en-US")} | ${b.label} | ${formatMicros(b.latency.p50 * 1000)} | ${formatMicros(b.latency.p99 * 1000)} | ${formatMicros(b.reconcileMeanMs * 1000)} |`);
  return lines;
}

/** Runs the suite and writes `bench/results/scaling.json`. */
export function runScalingSuite(): void {
  const record = new SuiteRecord("scaling", { sizes: SIZES });
  const read = readPathRows();
  printTable("Read-path decision against the number of entries (declared = granted)", read);
  record.add("Read-path decision against the number of entries", read);
  const gate = gateRows();
  printTable("Gate decision against the number of allowlist and CEL rules (outbound call, private context)", gate);
  record.add("Gate decision against the number of rules", gate);
  const curve = controllerCurve();
  process.stdout.write(`\n### Run created → all children created, against Runs cached\n\n${curve.join("\n")}\n`);
  record.write();
}

if (import.meta.main) runScalingSuite();
