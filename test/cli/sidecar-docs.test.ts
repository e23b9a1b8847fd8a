import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repo } from "./run-cli.ts";
import { makeTempDir } from "./sidecar-harness.ts";

// Runs the walkthrough of docs/sidecar-api.md as written: every ```sh block in order (the `leviath sidecar`
// one in the background, on free ports), each compared with the ```json or ```text block after it.
const doc = readFileSync(repo("docs/sidecar-api.md"), "utf8");
const walkthrough = doc.slice(doc.indexOf("## Walkthrough"), doc.indexOf("## Endpoints"));
const blocks = [...walkthrough.matchAll(/```(sh|json|text)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
const VOLATILE = new Set(["raisedAt", "expiresAt", "timestamp"]);

function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, VOLATILE.has(k) ? "<volatile>" : stable(v)]));
  }
  return value;
}

function stableLine(line: string): unknown {
  try {
    return stable(JSON.parse(line));
  } catch {
    return line.replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT").replaceAll(env["DEMO"]!, "$DEMO");
  }
}

const demo = makeTempDir("leviath-sidecar-doc-");
spawnSync("mkdir", ["-p", join(demo, "d")]);
// No tool of the test's own: the page's first block, run in the checkout as it says, puts `leviath` on PATH.
const env: Record<string, string> = { ...(process.env as Record<string, string>), DEMO: join(demo, "d") };
delete env["LEVIATH_HOME"];
let sidecar: ReturnType<typeof spawn> | undefined;
let metricsBase = "";
let variables = "";

afterAll(async () => {
  if (sidecar === undefined) return;
  const exited = new Promise((resolve) => sidecar!.once("exit", (code) => resolve(code)));
  sidecar.kill("SIGTERM");
  expect(await exited).toBe(0);
});

function startDocumented(command: string): Promise<string> {
  const line = command.replace("--listen 127.0.0.1:8181", "--listen 127.0.0.1:0").replace("--metrics-listen 127.0.0.1:9090", "--metrics-listen 127.0.0.1:0");
  sidecar = spawn("bash", ["-c", line], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start: ${out}`)), 20_000);
    sidecar!.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (!out.includes("approval token file:") || !out.endsWith("\n")) return;
      clearTimeout(timer);
      env["SIDECAR"] = /listening on (\S+)/.exec(out)![1]!;
      metricsBase = /metrics on (http:\/\/[^/]+)/.exec(out)![1]!;
      resolve(out);
    });
  });
}

describe("docs/sidecar-api.md walkthrough", () => {
  it("has examples with their outputs", () => {
    expect(blocks.filter((b) => b.lang === "sh").length).toBeGreaterThanOrEqual(15);
  });

  it("runs as written, each output as documented", async () => {
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i]!;
      if (block.lang !== "sh") continue;
      const expected = blocks[i + 1]?.lang === "sh" ? undefined : blocks[i + 1];
      let stdout: string;
      if (block.body.startsWith("export PATH=")) {
        const r = spawnSync("bash", ["-c", `${block.body}\nprintf %s "$PATH"`], { cwd: repo("."), env, encoding: "utf8" });
        expect(r.status, r.stderr).toBe(0);
        env["PATH"] = r.stdout;
        continue;
      }
      if (block.body.includes("leviath sidecar")) {
        stdout = await startDocumented(block.body.replace(/\\\n\s*/g, ""));
      } else {
        // The walkthrough's variables are set by one block and used by the next ones: each block runs after it.
        const script = `${variables}\n${block.body.replaceAll("http://127.0.0.1:9090", metricsBase).replaceAll("SIDECAR=http://127.0.0.1:8181", `SIDECAR=${env["SIDECAR"]}`)}`;
        const r = spawnSync("bash", ["-c", script], { env, encoding: "utf8" });
        expect(r.status, `${block.body}\n${r.stderr}`).toBe(0);
        stdout = r.stdout;
        if (block.body.startsWith("SIDECAR=")) variables = block.body.replaceAll("SIDECAR=http://127.0.0.1:8181", `SIDECAR=${env["SIDECAR"]}`);
      }
      if (expected === undefined) continue;
      if (expected.lang === "json") expect(stable(JSON.parse(stdout)), block.body).toEqual(stable(JSON.parse(expected.body)));
      else expect(stdout.trimEnd().split("\n").map(stableLine), block.body).toEqual(expected.body.trimEnd().split("\n").map(stableLine));
    }
  });
});
