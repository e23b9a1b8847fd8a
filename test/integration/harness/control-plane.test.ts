// startControlPlane outside the global setup: what the demo command and a failing machine see.
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startControlPlane } from "./control-plane.ts";
import { kubectl } from "./kubectl.ts";
import { createTestCluster } from "./test-cluster.ts";

describe("startControlPlane", () => {
  it("starts an independent control plane and removes every trace on stop", async () => {
    const lines: string[] = [];
    const cp = await startControlPlane({ controllerManager: false, log: (l) => lines.push(l) });
    try {
      expect(lines.at(-1)).toContain("control plane up in");
      const cluster = createTestCluster(cp.kubeconfigPath, cp.binDir);
      const readyz = await kubectl(["get", "--raw", "/readyz"], { cluster });
      expect(readyz.stdout).toBe("ok");
      const kubeconfig = JSON.parse(await readFile(cp.kubeconfigPath, "utf8")) as { clusters: { cluster: { server: string } }[] };
      expect(kubeconfig.clusters[0]!.cluster.server).toBe(cp.server);
      expect(cp.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await cp.stop();
    }
    expect(existsSync(cp.dataDir)).toBe(false);
    await cp.stop();
  });

  it("fails a broken start with the component's log tail and keeps the logs", async () => {
    const binDir = await mkdtemp(join(tmpdir(), "leviath-fake-bin-"));
    try {
      await writeFile(join(binDir, "etcd"), "#!/bin/sh\necho 'fake etcd: refusing to start for the test' >&2\nexit 3\n");
      await chmod(join(binDir, "etcd"), 0o755);
      const failure = await startControlPlane({ binDir, controllerManager: false, log: () => {} }).then(
        () => new Error("the start succeeded"),
        (error: unknown) => error as Error,
      );
      expect(failure.message).toContain("etcd exited (code 3");
      expect(failure.message).toContain("fake etcd: refusing to start for the test");
      const kept = /data dir and logs kept in (\S+)/.exec(failure.message)?.[1];
      expect(kept).toBeDefined();
      expect(await readFile(join(kept!, "etcd.log"), "utf8")).toContain("refusing to start");
      await rm(kept!, { recursive: true, force: true });
    } finally {
      await rm(binDir, { recursive: true, force: true });
    }
  });
});
