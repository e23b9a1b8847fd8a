// The sandbox on a real node: a pod with the operator's restricted settings runs (kubelet, containerd,
// runc, images built here), and what its settings promise is checked from inside the running container.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, POD_SECURITY_ENFORCE_LABEL, testCluster, waitFor } from "../integration/harness/index.ts";
import { DEFAULT_POD_SETTINGS } from "../../src/sandbox/pod-settings.ts";
import { isPodFirewalled } from "./harness/network-policy.ts";
import { firstHost } from "./harness/node.ts";
import { buildSandboxPod, execInPod, runPod } from "./harness/sandbox-pod.ts";
import type {} from "./harness/provided-context.ts";

const node = inject("node");
const ALL_ZERO = "0000000000000000";

/** The pod's directory in a v1 cgroup hierarchy (the kubelet's cgroupfs layout under our cgroup root). */
function podCgroup(controller: string, uid: string): string {
  const kubepods = join("/sys/fs/cgroup", controller, node.cgroupRoot, "kubepods");
  for (const qos of ["", "burstable", "besteffort"]) {
    const dir = join(kubepods, qos, `pod${uid}`);
    try {
      readdirSync(dir);
      return dir;
    } catch {
      // not in this QoS class
    }
  }
  throw new Error(`no cgroup for pod ${uid} under ${kubepods}`);
}

/** Bytes of a binary-suffixed quantity (`2Gi`, `256Mi`): the settings' memory limits. */
function binaryBytes(quantity: string): number {
  const units: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
  const unit = quantity.slice(-2);
  const factor = units[unit];
  if (factor === undefined) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(quantity.slice(0, -2)) * factor;
}

/** `Name:\tvalue` lines of /proc/<pid>/status as a record. */
function parseStatus(text: string): Record<string, string> {
  return Object.fromEntries(text.split("\n").filter((l) => l.includes(":")).map((l) => {
    const [key, ...rest] = l.split(":");
    return [key!.trim(), rest.join(":").trim()];
  }));
}

describe("a sandbox pod on the real node", () => {
  let namespace = "";

  beforeAll(async () => {
    namespace = await createRestrictedNamespace("e2e-node");
  });

  afterAll(async () => {
    if (namespace) await deleteNamespace(namespace);
  });

  it("is admitted under enforce=restricted, runs, and holds its restrictions from inside", async () => {
    const ns = await testCluster().core.readNamespace({ name: namespace });
    expect(ns.metadata?.labels?.[POD_SECURITY_ENFORCE_LABEL]).toBe("restricted");
    const pod = await runPod(buildSandboxPod({ name: "sandbox", namespace, image: node.images.sandbox! }));
    expect(pod.spec?.nodeName).toBe(node.name);

    const status = await execInPod(namespace, "sandbox", "cat /proc/self/status");
    expect(status.exitCode, status.stderr).toBe(0);
    const fields = parseStatus(status.stdout);
    // Every capability set is empty: drop ALL reaches the bounding set too, so nothing can be regained.
    expect({ eff: fields.CapEff, prm: fields.CapPrm, inh: fields.CapInh, bnd: fields.CapBnd, amb: fields.CapAmb })
      .toEqual({ eff: ALL_ZERO, prm: ALL_ZERO, inh: ALL_ZERO, bnd: ALL_ZERO, amb: ALL_ZERO });
    expect(fields.NoNewPrivs).toBe("1");
    // 2 = SECCOMP_MODE_FILTER: the runtime's default profile is loaded.
    expect(fields.Seccomp).toBe("2");
    const uid = String(DEFAULT_POD_SETTINGS.runAsUser);
    expect(fields.Uid?.split(/\s+/)).toEqual([uid, uid, uid, uid]);
    expect(fields.Gid?.split(/\s+/)).toEqual([uid, uid, uid, uid]);

    const id = await execInPod(namespace, "sandbox", "id -u; id -g");
    expect(id.stdout.trim().split("\n")).toEqual([uid, uid]);

    // The root filesystem refuses writes, even where the user could write otherwise (the home dir is theirs)...
    const owner = await execInPod(namespace, "sandbox", "stat -c %u /home/sandbox");
    expect(owner.stdout.trim()).toBe(uid);
    const rootWrite = await execInPod(namespace, "sandbox", "echo x > /home/sandbox/probe");
    expect(rootWrite.exitCode).not.toBe(0);
    expect(rootWrite.stderr).toMatch(/Read-only file system/);
    // ...while the emptyDir /tmp takes them, so the refusal above is the mount's and not a permission.
    const tmpWrite = await execInPod(namespace, "sandbox", "echo x > /tmp/probe && cat /tmp/probe");
    expect(tmpWrite).toMatchObject({ exitCode: 0, stdout: "x\n" });
    const mounts = await execInPod(namespace, "sandbox", "grep -E '^[^ ]+ / ' /proc/mounts");
    expect(mounts.stdout.split(" ")[3]?.split(",")).toContain("ro");

    // No service-account token is mounted.
    const token = await execInPod(namespace, "sandbox", "ls /var/run/secrets/kubernetes.io/serviceaccount");
    expect(token.exitCode).not.toBe(0);

    // The limits reach the kernel: the container's memory cgroup, and the kubelet's podPidsLimit.
    const memory = await execInPod(namespace, "sandbox", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes");
    expect(memory.stdout.trim()).toBe(String(binaryBytes(DEFAULT_POD_SETTINGS.resources.sandbox.limits.memory!)));
    expect(readFileSync(join(podCgroup("pids", pod.metadata!.uid!), "pids.max"), "utf8").trim()).toBe("1024");
  });

  it("is reachable from the host over the pod network, as the sidecar's metrics will be scraped", async () => {
    const pod = await runPod(buildSandboxPod({ name: "served", namespace, image: node.images.sandbox!, labels: { "leviath.e2e/role": "server" } }));
    const podIp = pod.status?.podIP ?? "";
    expect(podIp.startsWith(node.network.subnet.split(".").slice(0, 3).join(".") + ".")).toBe(true);
    // busybox httpd daemonizes and outlives the exec; 8080 needs no capability.
    const served = await execInPod(namespace, "served", "echo served-from-the-sandbox > /tmp/index.html && httpd -p 8080 -h /tmp");
    expect(served.exitCode, served.stderr).toBe(0);
    const body = await waitFor(async () => {
      const response = await fetch(`http://${podIp}:8080/index.html`, { signal: AbortSignal.timeout(3_000) });
      return response.ok ? response.text() : undefined;
    }, { timeoutMs: 15_000, description: `http://${podIp}:8080/ from the host` });
    expect(body).toBe("served-from-the-sandbox\n");
  });

  it("under a deny-all NetworkPolicy: no route out exists, and the policy drops its packets", async () => {
    const labels = { "leviath.e2e/network": "none" };
    await testCluster().objects.create({
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "deny-all", namespace },
      spec: { podSelector: { matchLabels: labels }, policyTypes: ["Ingress", "Egress"] },
    });
    await runPod(buildSandboxPod({ name: "no-network", namespace, image: node.images.sandbox!, labels }));

    // What holds on this node for every pod, this one included: the only routes are the pod subnet and
    // the Service range, both to our own bridge; a route lookup for any other address fails in the
    // kernel (no packet is sent), so nothing in the pod can reach beyond the machine.
    const routes = await execInPod(namespace, "no-network", "ip route");
    expect(routes.exitCode, routes.stderr).toBe(0);
    expect(routes.stdout).not.toMatch(/^default/m);
    const targets = routes.stdout.trim().split("\n").map((l) => l.split(" ")[0]).sort();
    expect(targets).toEqual([node.network.serviceCidr, node.network.subnet].sort());
    const outside = await execInPod(namespace, "no-network", "ip route get 198.51.100.7");
    expect(outside.exitCode).not.toBe(0);
    expect(outside.stderr).toMatch(/unreachable/i);

    // And the policy is enforced (kube-router's firewall, once it has programmed the pod): egress to the
    // API server forward on this node, which every other pod reaches, is refused. network-policy.test.ts
    // checks the rest from inside the operator's own pods.
    await waitFor(() => isPodFirewalled(namespace, "no-network"), { timeoutMs: 60_000, intervalMs: 500, description: "kube-router to program the pod" });
    const apiService = firstHost(node.network.serviceCidr);
    const egress = await execInPod(namespace, "no-network", `nc -w 3 ${apiService} 443 </dev/null && echo connected || echo refused`);
    expect(egress.stdout.trim()).toBe("refused");
    const control = await execInPod(namespace, "served", `nc -w 3 ${apiService} 443 </dev/null && echo connected || echo refused`);
    expect(control.stdout.trim()).toBe("connected");
  });
});
