import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { repo } from "./run-cli.ts";
import { makeTempDir } from "./sidecar-harness.ts";

// Runs the walkthroughs of docs/mcp.md as written, in order and in one `$DEMO`: each ```sh block in order (the
// `leviath sidecar` one in the background, on a free port), each compared with the ```text block after it.
const doc = readFileSync(repo("docs/mcp.md"), "utf8");
const section = (from: string, to: string) =>
  [...doc.slice(doc.indexOf(from), doc.indexOf(to)).matchAll(/```(sh|text)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
/** Where a walkthrough's own sidecar listens, in the page (the test gives each a free port). */
const PAGE_PORT = /127\.0\.0\.1:818\d/g;
const demo = makeTempDir("leviath-mcp-doc-");
spawnSync("mkdir", ["-p", join(demo, "d")]);
// No tool of the test's own: the page's first block, run in the checkout as it says, sets PATH and LEVIATH for the rest.
const env: Record<string, string> = { ...(process.env as Record<string, string>), DEMO: join(demo, "d") };
const sidecars: ChildProcess[] = [];

afterAll(async () => {
  for (const sidecar of sidecars) {
    const exited = new Promise((resolve) => sidecar.once("exit", (code) => resolve(code)));
    sidecar.kill("SIGTERM");
    expect(await exited).toBe(0);
  }
});

/** Starts a walkthrough's `leviath sidecar` block on a free port; the port. */
async function startDocSidecar(body: string): Promise<string> {
  const sidecar = spawn("bash", ["-c", `cd "$DEMO" && exec ${body.trim().replace(/ &$/, "").replace(PAGE_PORT, "127.0.0.1:0")}`], { env, stdio: ["ignore", "pipe", "pipe"] });
  sidecars.push(sidecar);
  return new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no start: ${out}`)), 60_000);
    sidecar.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m !== null && out.includes("approval token file:")) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
}

it("runs the walkthrough as written, each output as documented", async () => {
  await runBlocks(section("## Walkthrough", "## Stages over MCP"), 8);
}, 300_000);

it("runs the stages walkthrough as written, after it", async () => {
  await runBlocks(section("## Stages over MCP", "## web_search through an MCP server"), 5);
}, 300_000);

it("runs the web_search walkthrough as written, after them", async () => {
  await runBlocks(section("## web_search through an MCP server", "## For an admin"), 4);
}, 300_000);

async function runBlocks(blocks: { lang: string; body: string }[], atLeast: number): Promise<void> {
  expect(blocks.length).toBeGreaterThanOrEqual(atLeast);
  let port = "";
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i]!;
    if (b.lang !== "sh") continue;
    if (b.body.includes("export LEVIATH=")) {
      const r = spawnSync("bash", ["-c", `${b.body}\nprintf '%s\\n%s' "$PATH" "$LEVIATH"`], { cwd: repo("."), env, encoding: "utf8", timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      [env["PATH"], env["LEVIATH"]] = r.stdout.split("\n").slice(-2) as [string, string];
      continue;
    }
    const script = `cd "$DEMO"\n${b.body.replace(PAGE_PORT, `127.0.0.1:${port}`)}`;
    if (b.body.includes("leviath sidecar")) {
      port = await startDocSidecar(b.body);
      continue;
    }
    const r = spawnSync("bash", ["-c", script], { env, encoding: "utf8", timeout: 120_000 });
    expect(r.status, `${b.body}\n${r.stderr}`).toBe(0);
    const next = blocks[i + 1];
    if (next?.lang === "text") expect(r.stdout.trim()).toBe(next.body.trim());
  }
}
