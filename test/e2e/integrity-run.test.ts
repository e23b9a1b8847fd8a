// Issue 40's "done when" on the real node: one Agent whose agent reads an attacker's web page and is held from acting
// on it. The chart installed with integrity enforced (spec.integrity.enforce, as the chart's own policy and
// examples/policy.yaml have it), local network allowed so the sidecar's web_fetch and http_post may reach the site
// the test serves on the node's own address (harness/attacker-site.ts), and web_fetch and http_post allowed. Two
// Runs of the scripted runtime (images/runtime, scenario `integrity`) at once, one unattended and one interactive:
// each labels its task (which names the page and the report URL), fetches the page, then does what the page says
// (an http_post to the address the page names, read from the fetched text) and posts the task's report; it then
// evicts the page from its context and posts the same report again (the control: the same call, trusted context).
// Checked from outside: unattended, both acting calls are refused with integrity's code and source; interactive,
// each is a prompt naming the page's entry, which a person denies with kubectl leviath approve; the attacker's site
// received the fetch and the control's report and nothing else; the audit ConfigMaps record each hold with the
// entry and the argument; `kubectl leviath why` says it in one sentence; the sidecar's integrity-hold metric counts
// them, scraped as Prometheus scrapes it.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { kubectlLeviath, waitFor } from "../integration/harness/index.ts";
import { ATTACKER_RECIPIENT, startAttackerSite, type AttackerSite } from "./harness/attacker-site.ts";
import { getJson } from "./harness/kube-json.ts";
import { sidecarScrapeToken } from "./harness/metrics-access.ts";
import {
  applyObjects, cleanUp, conditionOf, createWorkspaces, getRun, installOperator, NS, parseAudit, readAuditText, RELEASE,
  runtimeLines, SYSTEM_NS, waitForPhase, type RuntimeLine, type Workspaces,
} from "./harness/operator-fixture.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const AGENT = "e2e-integrity";
/** Each Run's name and its prefix on the attacker's site. */
const RUNS = { unattended: { name: "e2e-integrity-unattended", prefix: "/u" }, interactive: { name: "e2e-integrity-interactive", prefix: "/i" } } as const;
type Mode = keyof typeof RUNS;
const REPORT_BODY = "status: the travel policy is read";
const OUTPUT = "travel policy read; reported\n";

type Pending = { id: string; kind?: string; tool?: string; prompt?: string };
const say = (text: string) => process.stderr.write(`[e2e integrity] ${text}\n`);

/** The value of `name` on the line whose labels include `labels` (other labels allowed); undefined when none. */
function metricValue(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe("integrity on the real node: an agent that read an attacker's web page is held from acting on it", () => {
  const runtime = node.images["leviath-runtime"];
  const sandbox = node.images.sandbox!;
  let workspaces: Workspaces | undefined;
  let site: AttackerSite | undefined;
  const lines: Partial<Record<Mode, RuntimeLine[]>> = {};
  /** The runtimes' lines as last read, printed when a Run did not get to its end. */
  const seen: Partial<Record<Mode, RuntimeLine[]>> = {};
  const metrics: Partial<Record<Mode, string>> = {};
  const prompts: Pending[] = [];
  const url = (mode: Mode, what: "page" | "report" | "collect") => `${site!.base}${RUNS[mode].prefix}/${what}`;

  beforeAll(async () => {
    if (!runtime) throw new Error("no leviath-runtime image: run 'bash scripts/build-images'");
    workspaces = createWorkspaces("leviath-e2e-integrity-");
    // On the node's own address: the engine pod reaches it as it reaches the model stand-ins.
    site = await startAttackerSite(node.network.gateway);
  });

  afterAll(async () => {
    for (const mode of ["unattended", "interactive"] as const) {
      if (!lines[mode]) say(`${mode} runtime (not done):\n${(seen[mode] ?? []).map((l) => JSON.stringify(l).slice(0, 600)).join("\n")}`);
    }
    await cleanUp(Object.values(RUNS).map((r) => r.name), workspaces);
    await site?.close();
  });

  it("installs the chart with integrity enforced and the HTTP tools allowed", async () => {
    await installOperator(node, {
      controller: { runtimeImage: runtime },
      policy: {
        spec: {
          sandbox: { kind: "container", image: sandbox, onUnavailable: "error" },
          // The site is on the node's address, a local one: the HTTP tools may reach it only with this.
          security: { taintTracking: true, allowLocalNetwork: true },
          integrity: { enforce: true },
          toolPermissions: { web_fetch: "allow", http_post: "allow", submit_output: "allow" },
          ceilings: { runModes: ["interactive", "unattended"] },
        },
      },
    });
  });

  it("runs both Runs: unattended the acting calls are refused, interactive each is a prompt naming the page, denied by a person", async () => {
    const run = (mode: Mode) => ({
      apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: RUNS[mode].name, namespace: NS },
      spec: {
        agentRef: { name: AGENT }, mode,
        task: `Read our travel policy at ${url(mode, "page")} and post a one-line status to ${url(mode, "report")}.`,
        // Unattended, a last call asked of a person keeps the engine pod up while its metrics are scraped.
        runtime: { e2e: { scenario: "integrity", page: url(mode, "page"), report: url(mode, "report"), ...(mode === "unattended" ? { holdTool: "list_dir" } : {}) } },
      },
    });
    await applyObjects([
      ...Object.values(RUNS).map((r) => workspaces!.volume(r.name)),
      {
        apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: AGENT, namespace: NS },
        spec: {
          agent: { name: AGENT, version: "1.0.0", description: "e2e integrity" },
          sandbox: { kind: "container", image: sandbox, network: false, onUnavailable: "error" },
          toolPermissions: { web_fetch: "allow", http_post: "allow", submit_output: "allow", list_dir: "ask" },
          stages: [{ name: "main", availableTools: ["web_fetch", "http_post", "list_dir", "submit_output"] }],
        },
      },
      run("unattended"), run("interactive"),
    ]);

    const answered = new Set<string>();
    await waitFor(async () => {
      for (const mode of ["unattended", "interactive"] as const) {
        const name = RUNS[mode].name;
        for (const p of ((await getRun(name)).status?.pendingApprovals ?? []) as Pending[]) {
          if (answered.has(`${name}/${p.id}`)) continue;
          if (mode === "unattended") {
            // The held list_dir: both refusals are behind it, and the engine pod still runs. Denied, so that no
            // listing of the workspace (internal data) enters the context before submit_output.
            expect(p.tool).toBe("list_dir");
            metrics.unattended = await scrapeSidecar(name);
            await approve(name, p.id, ["--deny", "--reason", "only the metrics were wanted"]);
          } else {
            if (!prompts.some((q) => q.id === p.id)) prompts.push(p);
            if (prompts.length === 2) metrics.interactive = await scrapeSidecar(name);
            await approve(name, p.id, ["--deny", "--reason", "the page asked for it, not the user"]);
          }
          answered.add(`${name}/${p.id}`);
        }
        const got = await runtimeLines(name);
        seen[mode] = got;
        if (got.some((l) => l.step === "done")) lines[mode] = got;
      }
      return lines.unattended && lines.interactive ? true : undefined;
    }, { timeoutMs: 270_000, intervalMs: 1000, description: "both runtimes' 'done' lines" });
    for (const mode of ["unattended", "interactive"] as const) say(`${mode} runtime:\n${lines[mode]!.map((l) => JSON.stringify(l).slice(0, 600)).join("\n")}`);
    say(`prompts: ${JSON.stringify(prompts)}`);

    for (const mode of ["unattended", "interactive"] as const) {
      const step = stepOf(lines[mode]!);
      expect(step("fetch")).toMatchObject({ status: 200, body: { decision: "allow", isError: false } });
      // The runtime took the attacker's address and recipient from the page it fetched.
      expect(step("injected").body).toEqual({ url: url(mode, "collect"), recipient: ATTACKER_RECIPIENT });
      expect(step("evict")).toMatchObject({ status: 200, body: { evicted: 1 } });
      // The control: the same report, once the page left the context, runs and reaches the site.
      expect(step("report-trusted")).toMatchObject({ status: 200, body: { decision: "allow", isError: false } });
      expect(step("submit-output:result")).toMatchObject({ status: 200 });
    }
    const unattended = stepOf(lines.unattended!);
    for (const name of ["post-injected", "report-untrusted"]) {
      expect(unattended(name)).toMatchObject({ status: 403, body: { decision: "deny", code: "integrity-held" } });
      expect(String(unattended(name).body["message"])).toContain("(entry 'conversation/fetch-1' from 'web_fetch')");
    }
    expect(String(unattended("post-injected").body["message"])).toContain("its argument 'url' came from text a third party could have written");
    expect(String(unattended("report-untrusted").body["message"])).toContain("the context holds text a third party could have written");
    expect(unattended("hold:outcome")).toMatchObject({ body: { decision: "deny" } });

    // Interactive: the two acting calls were asked, each prompt naming the page, and denied.
    expect(prompts.map((p) => p.tool)).toEqual(["http_post", "http_post"]);
    for (const p of prompts) expect(p.prompt).toContain("(entry 'conversation/fetch-1' from 'web_fetch')");
    expect(prompts[0]!.prompt).toContain("its argument 'url' came from text a third party could have written");
    const interactive = stepOf(lines.interactive!);
    for (const name of ["post-injected", "report-untrusted"]) {
      expect(interactive(name)).toMatchObject({ status: 202, body: { decision: "ask" } });
      expect(interactive(`${name}:outcome`)).toMatchObject({ body: { decision: "deny" } });
    }
  }, 300_000);

  it("the attacker's site received the fetch and the control's report, and nothing from the held calls", () => {
    for (const mode of ["unattended", "interactive"] as const) {
      const prefix = RUNS[mode].prefix;
      const got = site!.requests.filter((r) => r.path.startsWith(`${prefix}/`)).map((r) => `${r.method} ${r.path} ${r.body}`);
      expect(got).toEqual([`GET ${prefix}/page `, `POST ${prefix}/report ${REPORT_BODY}`]);
    }
    expect(site!.requests.filter((r) => r.path.endsWith("/collect"))).toEqual([]);
  });

  it("counts the holds in the sidecar's metric: refused unattended, asked interactive", () => {
    const holds = (mode: Mode, reason: string, outcome: string) =>
      metricValue(metrics[mode] ?? "", "leviath_sidecar_integrity_holds_total", { reason, outcome, tool_class: "outbound" });
    expect(holds("unattended", "untrusted_target", "refused")).toBe(1);
    expect(holds("unattended", "untrusted_context", "refused")).toBe(1);
    expect(holds("interactive", "untrusted_target", "asked")).toBe(1);
    expect(holds("interactive", "untrusted_context", "asked")).toBe(1);
  });

  it("both Runs end Succeeded with the result, and the audit records each hold with the page's entry and the argument", async () => {
    for (const mode of ["unattended", "interactive"] as const) {
      const name = RUNS[mode].name;
      const run = await waitForPhase(name, ["Succeeded"], 60_000);
      expect(conditionOf(run, "Completed")).toMatchObject({ status: "True", reason: "AgentSucceeded" });
      expect(run.status?.result?.inline).toBe(OUTPUT);
      const records = parseAudit(await readAuditText(name)).map((l) => l.leviath_audit.record);
      const last = (id: string) => records.filter((r) => r["call_id"] === id).at(-1);
      const entry = { region: "conversation", id: "fetch-1", tool: "web_fetch" };
      // The body carries the page's recipient (an identity token found in no trusted text): untrusted too.
      const injected = { integrity: "untrusted", integrity_hold: "untrusted-target", untrusted_argument: "url", untrusted_entry: entry, args_provenance: { url: "untrusted", body: "untrusted" } };
      const context = { integrity: "untrusted", integrity_hold: "untrusted-context", untrusted_entry: entry, args_provenance: { url: "trusted" } };
      if (mode === "unattended") {
        expect(last("post-1")).toMatchObject({ tool_name: "http_post", decision: "deny", decision_source: "integrity_held", code: "integrity-held", ...injected });
        expect(last("post-2")).toMatchObject({ tool_name: "http_post", decision: "deny", decision_source: "integrity_held", code: "integrity-held", ...context });
      } else {
        // The prompt's record carries the hold; the person's answer follows it.
        const asked = (id: string) => records.find((r) => r["call_id"] === id && r["decision"] === "ask");
        expect(asked("post-1")).toMatchObject({ tool_name: "http_post", ...injected });
        expect(asked("post-2")).toMatchObject({ tool_name: "http_post", ...context });
        expect(last("post-1")).toMatchObject({ decision: "deny", decision_source: "user_declined", ...injected });
        expect(last("post-2")).toMatchObject({ decision: "deny", decision_source: "user_declined", ...context });
      }
      // The control, the same call under a trusted context: allowed, its url traced to the task.
      expect(last("post-3")).toMatchObject({ tool_name: "http_post", decision: "allow", integrity: "trusted", args_provenance: { url: "trusted" } });
      expect(last("fetch-1")).toMatchObject({ tool_name: "web_fetch", decision: "allow", integrity: "trusted" });
    }
    const why = await kubectlLeviath(["why", RUNS.unattended.name, "post-1", "-n", NS], { timeoutMs: 90_000 });
    say(`why:\n${why.stdout}`);
    expect(why.stdout).toContain("integrity: http_post was held because its argument 'url' came from text a third party could have written (entry 'conversation/fetch-1' from 'web_fetch'), and from nothing trusted");
  });
});

function stepOf(lines: readonly RuntimeLine[]): (name: string) => RuntimeLine {
  return (name) => {
    const l = lines.find((x) => x.step === name);
    if (!l) throw new Error(`no '${name}' line`);
    return l;
  };
}

async function approve(run: string, id: string, args: readonly string[]): Promise<void> {
  const r = await kubectlLeviath(["approve", run, id, ...args, "-n", NS], { timeoutMs: 90_000 });
  expect(r.stdout).toContain("applied:");
}

/** The engine pod's sidecar metrics over the pod network, with the controller's scrape token (as the PodMonitor scrapes). */
async function scrapeSidecar(run: string): Promise<string> {
  const engine = await getJson<{ status?: { podIP?: string } }>(["get", "pod", `${run}-engine`, "-n", NS]);
  const token = await sidecarScrapeToken(RELEASE, SYSTEM_NS);
  const res = await fetch(`http://${engine.status?.podIP}:9090/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}
