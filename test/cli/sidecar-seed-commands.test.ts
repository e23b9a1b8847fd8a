// Command seeds and the seed audit, against the real standalone sidecar: a command seed runs only when the
// policy allows seed commands and `[safe_commands]` covers it (no shell operator smuggled past a prefix), in the
// entry stage's sandbox (standalone: shell's confined local process, in the workdir), under the shell timeout and
// output caps; a non-zero exit is an error, not data. Every seed resolution, filled or refused, is one audit
// record (decisions.jsonl, upstream's field names) and one `leviath_sidecar_seeds_total` count.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, metricValue, parseJsonLines, post, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

let root = "";
let sc: SidecarProcess;
let off: SidecarProcess;

type SeedAnswer = { content?: string; label?: string; code?: string; message?: string; sources?: unknown[] };
const seed = (s: SidecarProcess, region: string, body: Record<string, unknown>) => post<SeedAnswer>(`${s.url}/v1/seeds`, { region, seed: body });
const records = () => parseJsonLines(readFileSync(join(root, "audit", "cmd", "stages", "0", "decisions.jsonl"), "utf8")).filter((r) => r["tool_name"] === "seed");

beforeAll(async () => {
  root = makeTempDir("leviath-seed-cmd-");
  const work = join(root, "work");
  mkdirSync(work);
  writeFileSync(join(work, "notes.md"), "notes\n");
  writeFileSync(join(root, "secret.txt"), "outside\n");
  // The blueprint asks for `rm` too: its own [safe_commands] count only where the admin honours them (not here).
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'cmd'\n[safe_commands]\nshell = ['rm']\n[stages.survey]\nmode = 'autonomous'\n[stages.write]\nmode = 'autonomous'\n");
  writeFileSync(join(root, "config.toml"), "[safe_commands]\nshell = ['cat', 'false', 'head -c', 'pwd', 'sleep']\n[limits]\nscript_shell_timeout_secs = 2\n");
  writeFileSync(join(root, "off.toml"), "[security]\nallow_seed_commands = false\n[safe_commands]\nshell = ['cat']\n");
  const common = ["--agent", join(root, "agent.leviath"), "--workdir", work];
  [sc, off] = await Promise.all([
    startSidecar([...common, "--config", join(root, "config.toml"), "--audit-dir", join(root, "audit"), "--metrics-listen", "127.0.0.1:0"]),
    startSidecar([...common, "--config", join(root, "off.toml"), "--audit-dir", join(root, "audit-off")]),
  ]);
}, 60_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
  if (off) expect(await off.stop()).toBe(0);
});

describe("command seeds", () => {
  it("runs a covered command in the workdir and labels its output as shell output", async () => {
    const r = await seed(sc, "notes", { command: "cat notes.md" });
    expect(r.status).toBe(200);
    const shell = await callTool(sc, "shell", { command: "true" });
    expect(r.body).toMatchObject({ content: "notes\n", sources: [], label: shell.body.label ?? "public" });
    expect((await seed(sc, "where", { command: "pwd" })).body.content).toBe(`${join(root, "work")}\n`);
  });

  it("refuses a command [safe_commands] does not cover, and one that smuggles a second command past a prefix", async () => {
    for (const command of ["rm -rf notes.md", "cat notes.md; cat ../secret.txt", "cat $(echo ../secret.txt)", "cat notes.md > copy", "catx"]) {
      const r = await seed(sc, "notes", { command });
      expect(r.status, command).toBe(403);
      expect(r.body).toMatchObject({ code: "seed-command-not-safe", message: `region 'notes': seed command '${command}' is not covered by [safe_commands]; add it to the policy's safeCommands.shell, or drop the seed` });
    }
    expect(readFileSync(join(root, "work", "notes.md"), "utf8")).toBe("notes\n");
  });

  it("refuses every command when the policy turns seed commands off", async () => {
    const r = await seed(off, "notes", { command: "cat notes.md" });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "seed-commands-disabled", message: "region 'notes': seed commands are disabled ([security] allow_seed_commands = false)" });
  });

  it("treats a non-zero exit, a timeout and an output past the cap as errors, never as content", async () => {
    const failed = await seed(sc, "x", { command: "false" });
    expect(failed.status).toBe(422);
    expect(failed.body).toMatchObject({ code: "seed-command-failed", message: "region 'x': seed command 'false' exited with code 1" });
    const slow = await seed(sc, "x", { command: "sleep 30" });
    expect(slow.body).toMatchObject({ code: "seed-command-timed-out", message: "region 'x': seed command 'sleep 30' timed out after 2 seconds" });
    const big = await seed(sc, "x", { command: "head -c 9000000 /dev/zero" });
    expect(big.status).toBe(422);
    expect(big.body.code).toBe("seed-command-capped");
    expect(big.body.content).toBeUndefined();
  }, 30_000);
});

describe("the seed audit", () => {
  it("writes one record per resolution, allowed or refused, with upstream's field names and the seed's own", async () => {
    const before = records().length;
    await seed(sc, "readme", { files: ["notes.md"] });
    await seed(sc, "secret", { files: ["../secret.txt"] });
    await seed(sc, "notes", { command: "cat notes.md" });
    await seed(sc, "notes", { command: "rm notes.md" });
    const recs = records().slice(before);
    expect(recs).toHaveLength(4);
    expect(recs[0]).toMatchObject({ agent_id: "cmd", tool_name: "seed", stage: "survey", decision: "allow", decision_source: "workdir", paths: ["notes.md"], seed: { region: "readme", form: "files", outcome: "filled", sources: [{ path: "notes.md", origin: "workdir" }] } });
    expect(recs[1]).toMatchObject({ decision: "deny", decision_source: "read_path", code: "seed-outside-workdir", seed: { region: "secret", form: "files", outcome: "refused" } });
    expect(recs[2]).toMatchObject({ decision: "allow", decision_source: "safe_commands", seed: { region: "notes", form: "command", outcome: "filled", safe_command_prefix: "cat", sandbox_stage: "survey", exit_code: 0 } });
    expect(recs[3]).toMatchObject({ decision: "deny", decision_source: "safe_commands", code: "seed-command-not-safe", seed: { form: "command", outcome: "refused" } });
    for (const r of recs) expect(typeof r["timestamp"]).toBe("number");
    // Contents never reach the audit.
    expect(JSON.stringify(recs)).not.toContain("notes\\n");
    const ids = records().map((r) => r["call_id"]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("counts every resolution by form and outcome", async () => {
    const text = await scrapeMetrics(sc);
    expect(metricValue(text, "leviath_sidecar_seeds_total", { form: "command", outcome: "filled" })).toBeGreaterThanOrEqual(3);
    expect(metricValue(text, "leviath_sidecar_seeds_total", { form: "command", outcome: "refused" })).toBeGreaterThanOrEqual(6);
    expect(metricValue(text, "leviath_sidecar_seeds_total", { form: "command", outcome: "failed" })).toBeGreaterThanOrEqual(3);
    expect(metricValue(text, "leviath_sidecar_seeds_total", { form: "files", outcome: "refused" })).toBeGreaterThanOrEqual(1);
  });
});
