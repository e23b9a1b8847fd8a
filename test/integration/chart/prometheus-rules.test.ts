// The chart's alerts and the Grafana dashboard's queries, checked by the real promtool, and every metric
// they name checked against the metrics the controller and the sidecar actually register.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createControllerMetrics } from "../../../src/metrics/controller-metrics.ts";
import { createSidecarMetrics } from "../../../src/metrics/sidecar-metrics.ts";
import { findFiringAlerts } from "./alerts-quiet.ts";
import { CHART, findManifest, findPromtool, parseManifests, renderChart, type Manifest } from "./chart-harness.ts";

type RuleGroup = { name: string; rules: { alert?: string; record?: string; expr: string; for?: string; annotations?: Record<string, string> }[] };
type Panel = { id: number; type: string; title: string; datasource?: { uid: string }; targets?: { expr: string; refId: string }[] };

let promtool = "";
let groups: RuleGroup[] = [];
const dir = mkdtempSync(join(tmpdir(), "leviath-rules-"));
const dashboard = JSON.parse(readFileSync(join(CHART, "dashboards/leviath.json"), "utf8")) as { uid: string; panels: Panel[]; templating: { list: { name: string }[] } };

beforeAll(async () => {
  promtool = findPromtool();
  const ms = parseManifests(await renderChart("leviath-operator", "leviath-system", ["--set", "metrics.prometheusRule.enabled=true"]));
  groups = (findManifest(ms, "PrometheusRule") as Manifest & { spec: { groups: RuleGroup[] } }).spec.groups;
}, 600_000);

/** `promtool check rules` on a rule file holding `groups`. */
function checkRules(name: string, ruleGroups: RuleGroup[]): { status: number | null; output: string } {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify({ groups: ruleGroups }));
  const r = spawnSync(promtool, ["check", "rules", file], { encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** The dashboard's queries as recording rules, with Grafana's variables replaced by values Prometheus takes. */
function dashboardRules(): RuleGroup[] {
  const rules = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({
    record: `leviath:dashboard:panel_${p.id}_${t.refId.toLowerCase()}`,
    expr: t.expr.replaceAll("$__rate_interval", "5m").replaceAll("$operator_namespace", "leviath-system").replaceAll("$namespace", ".*"),
  })));
  return [{ name: "dashboard", rules }];
}

/** Every metric name an expression mentions (identifiers followed by `{`, `[` or a space before an operator). */
function metricNames(expr: string): string[] {
  const names = expr.match(/\b(?:leviath|controller_runtime|workqueue|leader_election)_[a-z_]+\b/g) ?? [];
  return [...new Set(names)];
}

/** Sample names the code exposes: each metric, plus _bucket/_sum/_count for histograms. */
function exposedNames(): Set<string> {
  const out = new Set<string>();
  for (const registry of [createControllerMetrics().registry, createSidecarMetrics().registry]) {
    for (const m of registry.getMetricsAsArray()) {
      out.add(m.name);
      if (String((m as unknown as { type?: unknown }).type) === "histogram") for (const s of ["_bucket", "_sum", "_count"]) out.add(`${m.name}${s}`);
    }
  }
  return out;
}

describe("the PrometheusRule", () => {
  it("passes promtool check rules", () => {
    const alerts = groups.flatMap((g) => g.rules).length;
    const r = checkRules("alerts", groups);
    expect(r.output).toContain(`SUCCESS: ${alerts} rules found`);
    expect(r.status).toBe(0);
    expect(alerts).toBeGreaterThanOrEqual(8);
  });

  it("promtool refuses a broken expression (the check can fail)", () => {
    const broken = structuredClone(groups);
    broken[0]!.rules[0]!.expr = "sum by (namespace (rate(leviath_sidecar_decisions_total[5m]))";
    const r = checkRules("broken", broken);
    expect(r.status).not.toBe(0);
    expect(r.output).toContain("FAILED");
  });

  it("names only metrics the controller and the sidecar register", () => {
    const exposed = exposedNames();
    const used = groups.flatMap((g) => g.rules.flatMap((r) => metricNames(r.expr)));
    expect(used).toEqual(expect.arrayContaining(["leviath_sidecar_decisions_total", "leviath_sidecar_pending_approvals", "leviath_reconcile_errors_total"]));
    for (const name of used) expect(exposed.has(name), name).toBe(true);
  });
});

describe("the alerts on what a process exported", () => {
  it("stay quiet on a healthy controller's scrapes, and LeviathReconcileErrors fires once reconcile errors grow (the check can fail)", async () => {
    const at = { release: "leviath-operator", namespace: "leviath-system" };
    const target = { namespace: "leviath-system", pod: "leviath-operator-0" };
    const scrape = (errors: number) => [
      "# TYPE leviath_reconcile_errors_total counter",
      `leviath_reconcile_errors_total{controller="run",error_kind="transient"} ${errors}`,
      'leader_election_master_status{name="leviath-operator"} 1',
      'workqueue_depth{name="run"} 0',
    ].join("\n");
    expect(await findFiringAlerts({ first: scrape(0), last: scrape(0) }, target, at)).toEqual([]);
    expect(await findFiringAlerts({ first: scrape(0), last: scrape(3) }, target, at)).toEqual(["LeviathReconcileErrors"]);
    // No leader among the scraped processes: its alert fires too.
    expect(await findFiringAlerts({ first: "", last: 'leader_election_master_status{name="leviath-operator"} 0' }, target, at)).toEqual(["LeviathOperatorNoLeader"]);
  }, 120_000);
});

describe("the alerts' runbooks", () => {
  it("every alert links to a heading of docs/operations.md that exists", () => {
    const doc = readFileSync(join(CHART, "../../docs/operations.md"), "utf8");
    // GitHub's anchor for a heading: lower case, spaces to '-', punctuation dropped.
    const anchors = new Set([...doc.matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^a-z0-9 -]/g, "").replaceAll(" ", "-")));
    const alerts = groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);
    expect(alerts.length).toBeGreaterThanOrEqual(8);
    for (const rule of alerts) {
      const url = rule.annotations?.["runbook_url"];
      expect(url, rule.alert).toBe(`https://github.com/GEMISIS/leviath/blob/main/docs/operations.md#${rule.alert!.toLowerCase()}`);
      expect(anchors.has(url!.split("#")[1]!), `${rule.alert}: no heading for ${url}`).toBe(true);
    }
  });
});

describe("the Grafana dashboard", () => {
  it("has unique panel ids, one data source variable, and a query in every graph", () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(["datasource", "namespace", "operator_namespace"]);
    for (const p of dashboard.panels.filter((q) => q.type !== "row")) {
      expect(p.datasource?.uid, p.title).toBe("${datasource}");
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
  });

  it("covers gate decisions, taint levels, approvals and reconcile health", () => {
    const rows = dashboard.panels.filter((p) => p.type === "row").map((p) => p.title);
    expect(rows).toEqual(["Gate decisions (sidecars)", "Taint", "Approvals", "Controller"]);
  });

  it("every query passes promtool and names only registered metrics", () => {
    const rules = dashboardRules();
    const r = checkRules("dashboard", rules);
    expect(r.output).toContain(`SUCCESS: ${rules[0]!.rules.length} rules found`);
    const exposed = exposedNames();
    for (const rule of rules[0]!.rules) for (const name of metricNames(rule.expr)) expect(exposed.has(name), `${rule.record}: ${name}`).toBe(true);
  });
});
