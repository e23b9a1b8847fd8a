import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { delimiter } from "node:path";
import { expect, it } from "vitest";
import { repo } from "./run-cli.ts";
import { makeTempDir } from "./sidecar-harness.ts";

// Runs the "From upstream's config.toml" section of docs/mcp.md as written: each ```sh block in order, in one
// empty directory with the checkout's bin/ on PATH, its output compared with the ```text block after it.
const doc = readFileSync(repo("docs/mcp.md"), "utf8");
const start = doc.indexOf("### From upstream's config.toml");
const section = doc.slice(start, doc.indexOf("\n### ", start + 1));
const blocks = [...section.matchAll(/```(sh|text)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));

it("docs/mcp.md: importing upstream's [[mcp_servers]] runs as written, each output as documented", () => {
  expect(blocks.filter((b) => b.lang === "sh")).toHaveLength(3);
  const dir = makeTempDir("leviath-mcp-import-doc-");
  const env = { ...process.env, PATH: [repo("bin"), process.env["PATH"]].join(delimiter) };
  for (const [i, b] of blocks.entries()) {
    if (b.lang !== "sh") continue;
    const r = spawnSync("bash", ["-c", b.body], { cwd: dir, env, encoding: "utf8", timeout: 60_000 });
    expect(r.status, `${b.body}\n${r.stderr}`).toBe(0);
    expect(r.stdout.trim()).toBe(blocks[i + 1]?.lang === "text" ? blocks[i + 1]!.body.trim() : "");
  }
});
