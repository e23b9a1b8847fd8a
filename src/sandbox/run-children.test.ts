import { describe, expect, it } from "vitest";
import { LABEL } from "../api/constants.ts";
import type { KubeObject, Pod } from "./kube-types.ts";
import { ANNOTATION, buildChildNames } from "./names.ts";
import { DEFAULT_POD_SETTINGS, SIDECAR_NODE_OPTIONS } from "./pod-settings.ts";
import { SANDBOX_PID1 } from "./pods.ts";
import { buildRunChildren, type RunChildrenInput } from "./run-children.ts";
import { computeSandboxPlan, hasHostStages } from "./sandbox-plan.ts";
import { RUN, snapshotOf } from "./test-fixtures.ts";
import type { RunSnapshot } from "./run-snapshot.ts";

function childrenOf(snapshot: RunSnapshot, over: Partial<RunChildrenInput> = {}): KubeObject[] {
  const plan = computeSandboxPlan(RUN.name, snapshot.runPolicy);
  return buildRunChildren({
    run: RUN, snapshot, settings: DEFAULT_POD_SETTINGS, sandboxes: plan, hostExec: hasHostStages(snapshot.runPolicy), lifecycle: "active", ...over,
  });
}

const pods = (objs: KubeObject[]) => objs.filter((o): o is Pod => o.kind === "Pod");
const byKind = (objs: KubeObject[], kind: string) => objs.filter((o) => o.kind === kind);

/** The Pod Security `restricted` rules a pod spec must satisfy (what the API server's admission checks). */
function restrictedViolations(pod: Pod): string[] {
  const v: string[] = [];
  const psc = pod.spec.securityContext as { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  if (psc.runAsNonRoot !== true) v.push("runAsNonRoot");
  if (!(typeof psc.runAsUser === "number" && psc.runAsUser > 0)) v.push("runAsUser");
  if (psc.seccompProfile?.type !== "RuntimeDefault") v.push("seccomp");
  for (const c of pod.spec.containers) {
    const sc = c.securityContext as { allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[]; add?: string[] }; readOnlyRootFilesystem?: boolean; privileged?: boolean };
    if (sc.allowPrivilegeEscalation !== false) v.push(`${c.name}: allowPrivilegeEscalation`);
    if (!sc.capabilities?.drop?.includes("ALL") || sc.capabilities.add?.length) v.push(`${c.name}: capabilities`);
    if (sc.readOnlyRootFilesystem !== true) v.push(`${c.name}: readOnlyRootFilesystem`);
    if (sc.privileged) v.push(`${c.name}: privileged`);
    if (!c.resources.limits["memory"] || !c.resources.limits["cpu"]) v.push(`${c.name}: limits`);
    if (!c.volumeMounts.some((m) => m.mountPath === "/tmp")) v.push(`${c.name}: no writable /tmp`);
  }
  for (const vol of pod.spec.volumes) if ("hostPath" in vol) v.push(`hostPath ${vol.name}`);
  if (pod.spec.automountServiceAccountToken !== false) v.push("automount");
  return v;
}

const containerAgent = { image: "debian:bookworm-slim", network: false };

describe("buildRunChildren", () => {
  it("builds exactly the expected children for a two-signature agent", () => {
    const snapshot = snapshotOf({
      image: "runtime:1",
      sandbox: { kind: "container", ...containerAgent },
      stages: [{ name: "survey" }, { name: "build", sandbox: { kind: "container", image: "node:22-slim" } }, { name: "digest" }],
    });
    const objs = childrenOf(snapshot);
    const names = buildChildNames(RUN.name);
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      `ConfigMap/${names.configMap}`,
      `PersistentVolumeClaim/${names.workspace}`,
      `ServiceAccount/${names.serviceAccount}`,
      `Role/${names.role}`,
      `RoleBinding/${names.roleBinding}`,
      `NetworkPolicy/${names.networkPolicy}`,
      expect.stringMatching(/^Pod\/digest-1-sbx-[0-9a-f]{16}$/),
      expect.stringMatching(/^Pod\/digest-1-sbx-[0-9a-f]{16}$/),
      `Pod/${names.enginePod}`,
    ]);
    const sandboxes = pods(objs).filter((p) => p.metadata.labels?.[LABEL.component] === "sandbox");
    expect(sandboxes.map((p) => p.spec.containers[0]!.image)).toEqual(["debian:bookworm-slim", "node:22-slim"]);
    // survey and digest share the agent block, so they share one warm pod.
    expect(computeSandboxPlan(RUN.name, snapshot.runPolicy).map((p) => p.stages)).toEqual([["survey", "digest"], ["build"]]);
    expect(sandboxes[0]!.metadata.labels?.[LABEL.network]).toBe("none");
    expect(sandboxes[1]!.metadata.labels?.[LABEL.network]).toBeUndefined();
  });

  it("gives every child our labels and a controller owner reference to the Run", () => {
    for (const obj of childrenOf(snapshotOf({ image: "runtime:1", sandbox: { kind: "container", image: "alpine:3" } }))) {
      expect(obj.metadata.namespace).toBe(RUN.namespace);
      expect(obj.metadata.labels).toMatchObject({ [LABEL.run]: RUN.name, [LABEL.agent]: "notes", [LABEL.managedBy]: "leviath-operator" });
      expect(obj.metadata.ownerReferences).toEqual([{ apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: RUN.name, uid: RUN.uid, controller: true, blockOwnerDeletion: true }]);
    }
  });

  it.each([
    ["container sandboxes", { image: "r:1", sandbox: { kind: "container" as const, image: "alpine:3" } }],
    ["a host-only agent", { image: "r:1" }],
    ["a gvisor stage", { image: "r:1", stages: [{ name: "a", sandbox: { kind: "gvisor" as const, image: "alpine:3" } }] }],
  ])("every pod of %s passes Pod Security restricted", (_name, agent) => {
    const all = pods(childrenOf(snapshotOf(agent, { sandbox: { runtimeClasses: { gvisor: "gvisor" } } })));
    expect(all.length).toBeGreaterThan(0);
    for (const pod of all) expect(restrictedViolations(pod), pod.metadata.name).toEqual([]);
  });

  it("starts a runtime kind other than leviath with 'leviath adapter <kind>', and the reference runtime with its image's entrypoint", () => {
    const agentOf = (snapshot: RunSnapshot) => pods(childrenOf(snapshot)).find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!.spec.containers[0]!;
    const adapted = snapshotOf({ image: "registry.internal/claude-code:2.1.332", runtime: { kind: "claude-code" } }, { limits: { interactionTimeoutSeconds: 900 } });
    expect(adapted.controller.agent.runtimeKind).toBe("claude-code");
    expect(agentOf(adapted)).toMatchObject({ image: "registry.internal/claude-code:2.1.332", command: ["leviath", "adapter", "claude-code"], args: ["--interaction-timeout-seconds", "900"] });
    for (const agent of [{ image: "r:1" }, { image: "r:1", runtime: { kind: "leviath" as const } }]) {
      const snapshot = snapshotOf(agent);
      // Nothing pinned for the reference runtime: a Run of an unchanged Agent pins, and builds, what it did before.
      expect(snapshot.controller.agent).not.toHaveProperty("runtimeKind");
      expect(agentOf(snapshot)).not.toHaveProperty("command");
      expect(agentOf(snapshot)).not.toHaveProperty("args");
    }
  });

  it("pins the policy's template an mcp-command Agent names into runtime.json, and no template for any other kind", () => {
    const template = { name: "claude-print", provider: "anthropic" as const, command: ["claude", "-p", "{task}", "--mcp-config", "{mcp_config}"] };
    const policy = { ceilings: { runtimeKinds: ["mcp-command" as const] }, runtimeTemplates: [template, { ...template, name: "other" }] };
    const pinned = snapshotOf({ image: "r:1", runtime: { kind: "mcp-command", template: "claude-print" } }, policy);
    expect(pinned.runtime.template).toEqual({ ...template, env: {}, stdin: "none" });
    expect(pinned.controller.agent.runtimeKind).toBe("mcp-command");
    expect(snapshotOf({ image: "r:1", runtime: { kind: "mcp-command", template: "undeclared" } }, policy).runtime).not.toHaveProperty("template");
    expect(snapshotOf({ image: "r:1", runtime: { kind: "claude-code" } }, policy).runtime).not.toHaveProperty("template");
  });

  it("keeps the token, the run policy and the read-path volumes out of the agent container", () => {
    const snapshot = snapshotOf(
      { image: "r:1", readPaths: { allow: ["/shared/design/**"] }, sandbox: { kind: "container", image: "alpine:3" } },
      { readPaths: { global: ["glob:/shared/design/**"], volumes: [
        { path: "/shared/design", volume: { persistentVolumeClaim: { claimName: "design" } } },
        { path: "/shared/finance", volume: { persistentVolumeClaim: { claimName: "finance" } } },
      ] } },
    );
    const engine = pods(childrenOf(snapshot)).find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!;
    const [agent] = engine.spec.containers;
    const [sidecar] = engine.spec.initContainers ?? [];
    expect(engine.spec.containers).toHaveLength(1);
    // A native sidecar: it starts first and the pod completes when the agent container exits.
    expect(sidecar).toMatchObject({ name: "sidecar", restartPolicy: "Always" });
    expect(agent!.volumeMounts.map((m) => m.name).sort()).toEqual(["agent-tmp", "runtime-config", "runtime-secret", "workspace"]);
    // The runtime token's in-memory volume: read-only in the agent, written by the sidecar, never in a sandbox pod.
    expect(agent!.volumeMounts.find((m) => m.name === "runtime-secret")).toEqual({ name: "runtime-secret", mountPath: "/run/leviath-runtime", readOnly: true });
    expect(engine.spec.volumes.find((v) => v.name === "runtime-secret")).toEqual({ name: "runtime-secret", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } });
    expect(sidecar!.volumeMounts.map((m) => m.mountPath)).toEqual(expect.arrayContaining(["/var/run/secrets/kubernetes.io/serviceaccount", "/shared/design"]));
    expect(sidecar!.volumeMounts.map((m) => m.mountPath)).not.toContain("/shared/finance");
    expect(sidecar!.volumeMounts.find((m) => m.mountPath === "/shared/design")!.readOnly).toBe(true);
    expect(engine.spec.automountServiceAccountToken).toBe(false);
    expect(engine.spec.serviceAccountName).toBe(buildChildNames(RUN.name).serviceAccount);
    const sandbox = pods(childrenOf(snapshot)).find((p) => p.metadata.labels?.[LABEL.component] === "sandbox")!;
    expect(sandbox.spec.volumes.map((v) => v.name)).toEqual(["workspace", "tmp"]);
    expect(sandbox.spec.serviceAccountName).toBeUndefined();
  });

  it("holds the sidecar to 256Mi with V8 limits below it (DESIGN.md §7), and only the sidecar", () => {
    const engine = pods(childrenOf(snapshotOf({ image: "r:1" }))).find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!;
    const [agent] = engine.spec.containers;
    const [sidecar] = engine.spec.initContainers ?? [];
    expect(sidecar!.resources.limits["memory"]).toBe("256Mi");
    expect(sidecar!.env).toContainEqual({ name: "NODE_OPTIONS", value: SIDECAR_NODE_OPTIONS });
    expect(sidecar!.env).toContainEqual({ name: "MALLOC_MMAP_THRESHOLD_", value: "131072" });
    expect(Number(/--max-old-space-size=(\d+)/.exec(SIDECAR_NODE_OPTIONS)?.[1])).toBeLessThan(256);
    expect((agent!.env ?? []).map((e) => e.name)).not.toContain("NODE_OPTIONS");
  });

  it("mounts the workspace at the same path in every pod", () => {
    const snapshot = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3" } }, undefined, { workspace: { mountPath: "/workspace/notes", claimName: "repo" } });
    const objs = childrenOf(snapshot);
    expect(byKind(objs, "PersistentVolumeClaim")).toEqual([]);
    for (const pod of pods(objs)) {
      for (const c of pod.spec.containers) expect(c.volumeMounts).toContainEqual({ name: "workspace", mountPath: "/workspace/notes" });
      expect(pod.spec.volumes).toContainEqual({ name: "workspace", persistentVolumeClaim: { claimName: "repo" } });
    }
  });

  it("lets the sidecar exec into exactly the run's sandbox pods, plus the engine pod only for host stages", () => {
    const sandboxed = childrenOf(snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3" } }));
    const role = byKind(sandboxed, "Role")[0] as KubeObject & { rules: { resources: string[]; resourceNames?: string[] }[] };
    const exec = role.rules.find((r) => r.resources.includes("pods/exec"))!;
    expect(exec.resourceNames).toEqual(pods(sandboxed).filter((p) => p.metadata.labels?.[LABEL.component] === "sandbox").map((p) => p.metadata.name));
    const host = childrenOf(snapshotOf({ image: "r:1" }));
    const hostRole = byKind(host, "Role")[0] as typeof role;
    expect(hostRole.rules.find((r) => r.resources.includes("pods/exec"))!.resourceNames).toEqual([buildChildNames(RUN.name).enginePod]);
    for (const rule of [...role.rules, ...hostRole.rules]) {
      if (rule.resources.some((r) => r.startsWith("pods"))) expect(rule.resourceNames?.length).toBeGreaterThan(0);
    }
  });

  it("writes no NetworkPolicy when every sandbox keeps its network", () => {
    expect(byKind(childrenOf(snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3" } })), "NetworkPolicy")).toEqual([]);
  });

  it("drops the pods and the sidecar identity once the run is over", () => {
    const snapshot = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } });
    expect(childrenOf(snapshot, { lifecycle: "stopped" }).map((o) => o.kind)).toEqual(["ConfigMap", "PersistentVolumeClaim"]);
    expect(childrenOf(snapshot, { lifecycle: "finished" }).map((o) => o.kind)).toEqual(["ConfigMap", "PersistentVolumeClaim", "Pod"]);
  });

  it("keeps the sidecar identity and the NetworkPolicy while pods still stop, with no exec rights left", () => {
    const snapshot = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3", network: false } });
    const draining = childrenOf(snapshot, { lifecycle: "stopped", draining: true });
    expect(draining.map((o) => o.kind)).toEqual(["ConfigMap", "PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"]);
    const role = byKind(draining, "Role")[0] as KubeObject & { rules: { resources: string[] }[] };
    expect(role.rules.some((r) => r.resources.some((x) => x.startsWith("pods")))).toBe(false);
  });

  it("holds the engine pod back, and only it, while a credential Secret is missing", () => {
    const snapshot = snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3" } });
    const held = pods(childrenOf(snapshot, { holdEngine: true }));
    expect(held.map((p) => p.metadata.labels?.[LABEL.component])).toEqual(["sandbox"]);
  });

  it("gives credentials to the agent container only: never the sidecar, never a sandbox pod", () => {
    const snapshot = snapshotOf(
      { image: "r:1", sandbox: { kind: "container", image: "alpine:3" }, credentials: [{ secretName: "model-key" }, { secretName: "tls", as: "files" }] },
      undefined,
      { credentials: [{ secretName: "run-key", as: "env" }] },
    );
    const all = pods(childrenOf(snapshot));
    const engine = all.find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!;
    const [agent] = engine.spec.containers;
    expect(agent!.envFrom).toEqual([{ secretRef: { name: "model-key" } }, { secretRef: { name: "run-key" } }]);
    expect(agent!.volumeMounts).toContainEqual({ name: "credential-0", mountPath: "/var/run/leviath/credentials/tls", readOnly: true });
    expect(engine.spec.volumes).toContainEqual({ name: "credential-0", secret: { secretName: "tls", defaultMode: 0o440 } });
    const sidecar = engine.spec.initContainers![0]!;
    expect(sidecar.envFrom).toBeUndefined();
    expect(sidecar.volumeMounts.map((m) => m.name)).not.toContain("credential-0");
    for (const pod of all.filter((p) => p !== engine)) expect(JSON.stringify(pod)).not.toMatch(/model-key|run-key|"tls"/);
  });

  it("lets sandbox pods go at once (PID 1 exits on SIGTERM, 1 s grace) and gives the sidecar its grace to flush", () => {
    const all = pods(childrenOf(snapshotOf({ image: "r:1", sandbox: { kind: "container", image: "alpine:3" } })));
    const engine = all.find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!;
    expect(engine.spec.terminationGracePeriodSeconds).toBe(DEFAULT_POD_SETTINGS.engineGraceSeconds);
    expect(engine.spec.initContainers![0]!.args).toEqual(expect.arrayContaining(["--stop-grace-ms", String((DEFAULT_POD_SETTINGS.engineGraceSeconds - 2) * 1000)]));
    for (const pod of all.filter((p) => p !== engine)) expect(pod.spec.terminationGracePeriodSeconds).toBe(1);
  });

  it("starts the sidecar's metrics listener only with the scrape token's digest, and never hands the agent either", () => {
    const agent = { image: "r:1", sandbox: { kind: "container" as const, image: "alpine:3" } };
    const engineOf = (objs: KubeObject[]) => pods(objs).find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!;
    const digest = "ab".repeat(32);
    const secured = engineOf(childrenOf(snapshotOf(agent), { settings: { ...DEFAULT_POD_SETTINGS, sidecarMetricsTokenSha256: digest } }));
    const sidecar = secured.spec.initContainers![0]!;
    expect(sidecar.args).toEqual(expect.arrayContaining(["--metrics-listen", "0.0.0.0:9090", "--metrics-token-sha256", digest]));
    expect(sidecar.ports).toEqual([{ name: "metrics", containerPort: 9090, protocol: "TCP" }]);
    expect(JSON.stringify(secured.spec.containers)).not.toContain(digest);
    // Without a token there is no metrics listener at all, never an unauthenticated one.
    const bare = engineOf(childrenOf(snapshotOf(agent))).spec.initContainers![0]!;
    expect((bare.args ?? []).filter((a) => a.startsWith("--metrics"))).toEqual([]);
    expect(bare.ports).toBeUndefined();
  });

  it("points the sidecar and the runtime at the tracing endpoint only when the operator traces", () => {
    const agent = { image: "r:1", sandbox: { kind: "container" as const, image: "alpine:3" } };
    const engineOf = (objs: KubeObject[]) => pods(objs).find((p) => p.metadata.name === buildChildNames(RUN.name).enginePod)!;
    const endpoint = "http://collector.observability:4318/v1/traces";
    const traced = engineOf(childrenOf(snapshotOf(agent), { settings: { ...DEFAULT_POD_SETTINGS, tracing: { endpoint, content: "internal" } } }));
    expect(traced.spec.initContainers![0]!.args).toEqual(expect.arrayContaining(["--otlp-traces-endpoint", endpoint, "--trace-content", "internal"]));
    expect(traced.spec.containers[0]!.env).toEqual(expect.arrayContaining([{ name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: endpoint }]));
    const bare = engineOf(childrenOf(snapshotOf(agent)));
    expect(JSON.stringify(bare.spec)).not.toMatch(/otlp|trace-content|OTEL_/i);
  });

  it("is deterministic, and the spec hash follows the pod spec", () => {
    const agent = { image: "r:1", sandbox: { kind: "container" as const, image: "alpine:3" } };
    expect(childrenOf(snapshotOf(agent))).toEqual(childrenOf(snapshotOf(agent)));
    const hash = (objs: KubeObject[]) => pods(objs).map((p) => p.metadata.annotations?.[ANNOTATION.specHash]);
    const a = hash(childrenOf(snapshotOf(agent)));
    const b = hash(childrenOf(snapshotOf({ ...agent, image: "r:2" })));
    expect(a[0]).toBe(b[0]);
    expect(a[1]).not.toBe(b[1]);
  });

  it("puts pods of a stronger kind on the admin's runtime class", () => {
    const snapshot = snapshotOf({ image: "r:1", sandbox: { kind: "microvm", image: "alpine:3" } }, { sandbox: { runtimeClasses: { microvm: "kata" } } });
    const sandbox = pods(childrenOf(snapshot)).find((p) => p.metadata.labels?.[LABEL.component] === "sandbox")!;
    expect(sandbox.spec.runtimeClassName).toBe("kata");
    expect(sandbox.spec.containers[0]!.command).toEqual([...SANDBOX_PID1]);
  });
});

describe("computeSandboxPlan", () => {
  it("reports a container sandbox with no image as a problem known before any pod exists", () => {
    const plan = computeSandboxPlan(RUN.name, snapshotOf({ image: "r:1", sandbox: { kind: "container" } }).runPolicy);
    expect(plan).toHaveLength(1);
    expect(plan[0]!.problem).toBe("container sandbox requires an `image`");
  });
});
