// The minimal runtime of docs/runtime.md, as written, against a standalone sidecar: it waits for the sidecar,
// labels its task, enters both stages, reads through the sidecar, submits, and exits 0.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repo } from "./run-cli.ts";
import { makeTempDir, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

const doc = readFileSync(repo("docs/runtime.md"), "utf8");
const code = /## A minimal runtime[\s\S]*?```js\n([\s\S]*?)```/.exec(doc)?.[1] ?? "";
let sc: SidecarProcess | undefined;
afterAll(async () => {
  if (sc) await sc.stop();
});

describe("the minimal runtime of docs/runtime.md", () => {
  it("is a few dozen lines", () => {
    expect(code.split("\n").length).toBeGreaterThan(10);
    expect(code.split("\n").length).toBeLessThanOrEqual(40);
  });

  it("runs its stages through a real sidecar and exits 0 once its output is handed over", async () => {
    const root = makeTempDir("leviath-runtime-doc-");
    mkdirSync(join(root, "work"));
    writeFileSync(join(root, "work", "notes.md"), "ship it\n");
    writeFileSync(join(root, "agent.leviath"), '[agent]\nname = "mini"\n\n[stages.survey]\nmode = "autonomous"\n\n[stages.digest]\nmode = "output"\n');
    writeFileSync(join(root, "runtime.json"), JSON.stringify({
      agent: { agent: { name: "mini" }, stages: [{ name: "survey" }, { name: "digest" }] },
      run: { task: "digest the notes", inputs: { file: "notes.md" }, mode: "interactive" },
    }));
    writeFileSync(join(root, "minimal-runtime.mjs"), code);
    sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--run", "mini"]);
    const r = spawnSync(process.execPath, [join(root, "minimal-runtime.mjs")], {
      env: { ...process.env, LEVIATH_SIDECAR_URL: sc.url, LEVIATH_SIDECAR_TOKEN_FILE: sc.runtimeTokenFile, LEVIATH_RUNTIME_CONFIG: join(root, "runtime.json") }, encoding: "utf8", timeout: 60_000,
    });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ task: "digest the notes", submitted: "run" });
    const decisions = [0, 1].flatMap((i) => readFileSync(join(root, "audit", "mini", "stages", String(i), "decisions.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { call_id: string; decision: string }));
    // Its POST /v1/stage is the digest stage's first record (the move, with a call id of the sidecar's).
    expect(decisions.map((d) => [d.call_id.replace(/^stage-[0-9a-f-]{36}$/, "stage-<uuid>"), d.decision])).toEqual([["survey-read", "allow"], ["stage-<uuid>", "stage"], ["digest-read", "allow"], ["submit", "allow"]]);
  });
});
