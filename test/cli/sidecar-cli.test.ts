import { createServer } from "node:net";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { leviath, repo } from "./run-cli.ts";
import { makeTempDir, startSidecar } from "./sidecar-harness.ts";

// Starting and stopping `leviath sidecar`: bad files fail at start naming the entry; flags are checked.
let root: string;
let work: string;

beforeAll(() => {
  root = makeTempDir("leviath-sidecar-cli-");
  work = join(root, "work");
  mkdirSync(work);
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'cli'\n[read_paths]\nallow = ['~/docs']\n");
});

const start = (args: string[], env: Record<string, string | undefined> = {}) =>
  leviath(["sidecar", "--listen", "127.0.0.1:0", "--audit-dir", join(root, "audit"), ...args], { env: { LEVIATH_HOME: root, ...env } });

describe("leviath sidecar: start-up", () => {
  it("prints its help", () => {
    const r = leviath(["sidecar", "--help"]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("Usage: leviath sidecar --agent FILE");
    expect(leviath(["--help"]).stdout).toContain("sidecar ");
  });

  it("fails at start on a blueprint with an unknown [sandbox] key, naming it", () => {
    const r = start(["--agent", repo("test/fixtures/invalid/netwrok.leviath"), "--workdir", work]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("netwrok.leviath");
    expect(r.stderr).toContain("netwrok");
    expect(r.stdout).toBe("");
  });

  it("fails at start on a grant that does not compile, naming the entry", () => {
    writeFileSync(join(root, "bad.toml"), "[security]\nread_paths = ['glob:/a/***']\n");
    const r = start(["--agent", join(root, "agent.leviath"), "--config", join(root, "bad.toml"), "--workdir", work]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("read_paths grant in your config.toml: read_paths entry 'glob:/a/***': invalid glob");
  });

  it("fails at start on a run policy that is not valid, naming the file and the key", () => {
    writeFileSync(join(root, "rp.json"), JSON.stringify({ agent: { key: "a/b", name: "b" } }));
    const r = start(["--run-policy", join(root, "rp.json"), "--run", "r1", "--workdir", work]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${join(root, "rp.json")}: stages:`);
  });

  it("checks its flags", () => {
    expect(start(["--agent", join(root, "agent.leviath"), "--workdir", join(root, "nope")]).stderr).toContain("--workdir");
    const exposed = leviath(["sidecar", "--agent", join(root, "agent.leviath"), "--workdir", work, "--listen", "0.0.0.0:8181"]);
    expect(exposed.status).toBe(2);
    expect(exposed.stderr).toContain("is not a loopback address");
    expect(start(["--agent", join(root, "agent.leviath"), "--workdir", work, "--mode", "sometimes"]).stderr).toContain("--mode 'sometimes' is not one of interactive, unattended, yolo, headless");
    expect(start(["--run-policy", join(root, "rp.json"), "--agent", join(root, "agent.leviath"), "--workdir", work, "--run", "x"]).status).toBe(2);
    expect(start(["--run-policy", join(root, "rp.json"), "--workdir", work]).stderr).toContain("--run NAME is required");
    expect(start(["--agent", join(root, "agent.leviath"), "--workdir", work, "--shell", "pod-exec"]).stderr).toContain("needs a cluster");
  }, 120_000); // eight CLI starts, each several seconds on a loaded machine

  it("exits 1 when its address is taken", async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = leviath(["sidecar", "--agent", join(root, "agent.leviath"), "--workdir", work, "--audit-dir", join(root, "audit"), "--listen", `127.0.0.1:${port}`]);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("EADDRINUSE");
    } finally {
      taken.close();
    }
  });

  it("prints where it listens and exits 0 on SIGINT as on SIGTERM", async () => {
    const sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--workdir", work, "--audit-dir", join(root, "audit")], { env: { LEVIATH_HOME: root } });
    expect(sc.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sc.token).toMatch(/^[0-9a-f]{64}$/);
    expect(await sc.stop("SIGINT")).toBe(0);
  });
});
