// Whether the chart's alerts would fire on what a cluster's processes actually exported: two scrapes of a
// `/metrics` endpoint (at the start of a test and at its end) become promtool input series as if the scraped
// process kept doing for the next 40 minutes what it did between them (a counter grows by the same step every
// minute; a gauge keeps its last value), labelled as Prometheus labels a target; `promtool test rules` then
// evaluates every alert of the chart's PrometheusRule over that window and must find none firing. A counter that
// grew during the test (a reconcile error) makes its rate alert fire: the check can fail.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { findManifest, findPromtool, parseManifests, renderChart, type Manifest } from "./chart-harness.ts";

type RuleGroup = { name: string; rules: { alert?: string; record?: string; expr: string }[] };

/** The samples of an exposition: `name{labels}` → value (comments and `NaN` dropped). */
export function parseSamples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    const value = Number(line.slice(at + 1));
    if (Number.isFinite(value)) out.set(line.slice(0, at), value);
  }
  return out;
}

/** `name{labels}` with the target's labels added, as Prometheus stores a scraped sample. */
function withTarget(series: string, target: Record<string, string>): string {
  const extra = Object.entries(target).map(([k, v]) => `${k}="${v}"`).join(",");
  const brace = series.indexOf("{");
  if (brace < 0) return `${series}{${extra}}`;
  const inner = series.slice(brace + 1, -1);
  return `${series.slice(0, brace)}{${inner === "" ? extra : `${inner},${extra}`}}`;
}

/**
 * The alerts of the chart's PrometheusRule (rendered as `release` in `namespace`, as installed) that would fire
 * within 40 minutes on the samples of `first` and `last`, scraped from a target with labels `target`; `[]` when none would.
 */
export async function findFiringAlerts(scrapes: { first: string; last: string }, target: Record<string, string>, at: { release: string; namespace: string }): Promise<string[]> {
  const promtool = findPromtool();
  const ms = parseManifests(await renderChart(at.release, at.namespace, ["--set", "metrics.prometheusRule.enabled=true"]));
  const groups = (findManifest(ms, "PrometheusRule") as Manifest & { spec: { groups: RuleGroup[] } }).spec.groups;
  const first = parseSamples(scrapes.first);
  const last = parseSamples(scrapes.last);
  const minutes = 40;
  const inputSeries = [...last].map(([series, value]) => {
    const before = first.get(series) ?? 0;
    const isCounter = /_(total|count|sum|bucket)(\{|$)/.test(series);
    const step = isCounter ? Math.max(0, value - before) : 0;
    return { series: withTarget(series, target), values: `${value}+${step}x${minutes}` };
  });
  const alerts = groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
  const dir = mkdtempSync(join(tmpdir(), "leviath-alerts-"));
  writeFileSync(join(dir, "rules.yaml"), stringify({ groups }));
  // One test per alert, evaluated at the end of the window: every `for` of the chart's rules is shorter.
  const tests = alerts.map((alertname) => ({ interval: "1m", input_series: inputSeries, alert_rule_test: [{ eval_time: `${minutes}m`, alertname, exp_alerts: [] }] }));
  writeFileSync(join(dir, "test.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: "1m", tests }));
  const r = spawnSync(promtool, ["test", "rules", join(dir, "test.yaml")], { encoding: "utf8", cwd: dir });
  if (r.status === 0) return [];
  const output = `${r.stdout}${r.stderr}`;
  const firing = alerts.filter((a) => output.includes(`alertname: ${a}`));
  if (firing.length === 0) throw new Error(`promtool test rules failed without naming an alert:\n${output}`);
  return firing;
}
