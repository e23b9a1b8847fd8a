// The sidecar's /metrics over real HTTP: served only to the scrape token whose SHA-256 it was started with. Each
// party that can reach the port tries what it holds: nothing, the runtime's own token (the agent container shares
// the pod's network), the approval token, the digest it can read in the pod spec, a forged or stretched token,
// another scheme. A sidecar is never started with an unauthenticated metrics listener.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { digestMetricsToken } from "../../src/sidecar/http/metrics-token.ts";
import { leviath } from "./run-cli.ts";
import { callTool, makeTempDir, scrapeMetrics, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

const TOKEN = "b3f1c0d2e4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff";
let sc: SidecarProcess;
let root: string;
let args: string[];

const scrape = async (headers: Record<string, string>, path = "/metrics") => {
  const res = await fetch(new URL(path, sc.metricsUrl!), { headers });
  return { status: res.status, body: await res.text(), challenge: res.headers.get("www-authenticate") };
};

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-metrics-auth-");
  mkdirSync(join(root, "work"), { recursive: true });
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'scraped'\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nshell = 'allow'\n");
  args = ["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", join(root, "work"), "--audit-dir", join(root, "audit")];
  sc = await startSidecar([...args, "--metrics-listen", "127.0.0.1:0", "--metrics-token-sha256", digestMetricsToken(TOKEN)]);
  await callTool(sc, "shell", { command: "true" });
}, 120_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

describe("sidecar metrics authentication", () => {
  it("serves the scrape token", async () => {
    const r = await scrape({ authorization: `Bearer ${TOKEN}` });
    expect(r.status).toBe(200);
    expect(r.body).toMatch(/^leviath_sidecar_decisions_total\{[^}]*decision="allow"[^}]*\} 1$/m);
  });

  it("refuses a scrape without credentials, with a challenge and no metrics", async () => {
    const r = await scrape({});
    expect(r).toEqual({ status: 401, body: "Unauthorized", challenge: "Bearer" });
  });

  it.each([
    ["the agent runtime's own token", () => `Bearer ${sc.runtimeToken}`],
    ["the approval token", () => `Bearer ${sc.token}`],
    ["the digest from the pod spec", () => `Bearer ${digestMetricsToken(TOKEN)}`],
    ["a forged token", () => `Bearer ${"0".repeat(64)}`],
    ["the token with a suffix", () => `Bearer ${TOKEN}x`],
    ["a prefix of the token", () => `Bearer ${TOKEN.slice(0, 63)}`],
    ["the token under Basic", () => `Basic ${Buffer.from(`prometheus:${TOKEN}`).toString("base64")}`],
    ["the bare token", () => TOKEN],
    ["an empty bearer", () => "Bearer "],
  ])("refuses %s", async (_what, header) => {
    const r = await scrape({ authorization: header() });
    expect(r.status).toBe(401);
    expect(r.body).not.toContain("leviath_sidecar_");
  });

  it("answers nothing about other paths without the token, and 404 with it", async () => {
    expect((await scrape({}, "/v1/healthz")).status).toBe(401);
    expect((await scrape({ authorization: `Bearer ${TOKEN}` }, "/v1/healthz")).status).toBe(404);
  });

  it("the runtime's API listener does not serve metrics, even to the scrape token", async () => {
    const res = await fetch(`${sc.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).not.toBe(200);
    expect(await res.text()).not.toContain("leviath_sidecar_");
  });

  it("the harness scrapes as the scraper does", async () => {
    const own = await startSidecar([...args, "--run", "harness", "--metrics-listen", "127.0.0.1:0"]);
    try {
      expect(await scrapeMetrics(own)).toContain("leviath_sidecar_");
      expect((await fetch(own.metricsUrl!)).status).toBe(401);
    } finally {
      await own.stop();
    }
  });
});

describe("sidecar metrics flags fail closed", () => {
  it.each([
    [["--metrics-listen", "127.0.0.1:0"], "--metrics-listen needs --metrics-token-sha256"],
    [["--metrics-listen", "127.0.0.1:0", "--metrics-token-sha256", "ABC"], "--metrics-token-sha256: 'ABC' is not a SHA-256 digest"],
    [["--metrics-listen", "127.0.0.1:0", "--metrics-token-sha256", digestMetricsToken(TOKEN).toUpperCase()], "is not a SHA-256 digest"],
    [["--metrics-token-sha256", digestMetricsToken(TOKEN)], "--metrics-token-sha256 goes with --metrics-listen"],
  ])("%j is refused before anything listens", (flags, message) => {
    const r = leviath(["sidecar", ...args, "--run", "refused", "--listen", "127.0.0.1:0", ...flags]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).not.toContain("listening on");
  });
});
