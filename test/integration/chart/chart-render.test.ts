// The Helm chart rendered by the real helm: lint, default and non-default values, what the schema and the
// templates refuse (with messages that name the value), least-privilege RBAC, and deploy/ in step with it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { RESOURCES } from "../../../src/kube/resources.ts";
import { buildApprovalRelayObjects } from "../../../src/sandbox/approval-relay.ts";
import { listAdoptedObjects } from "../../../src/sandbox/pool-pods.ts";
import { buildRole } from "../../../src/sandbox/run-objects.ts";
import { helm, REPO_ROOT } from "../harness/index.ts";
import { allows, CHART, findManifest, parseManifests, renderChart, renderChartResult, rulesOf, type Manifest, type Rule } from "./chart-harness.ts";

type Container = { name: string; image: string; args: string[]; env?: { name: string; value?: string }[]; livenessProbe: { httpGet: { path: string } }; readinessProbe: { httpGet: { path: string } }; resources: { requests: Record<string, string> }; securityContext: Record<string, unknown> };
type PodSpec = { containers: Container[]; securityContext: Record<string, unknown>; serviceAccountName: string };
type Deployment = Manifest & { spec: { replicas: number; selector: { matchLabels: Record<string, string> }; template: { spec: PodSpec } } };

const NS = "leviath-system";
const controller = (ms: Manifest[]) => (findManifest(ms, "Deployment") as Deployment).spec.template.spec.containers[0]!;

describe("helm lint", () => {
  it("passes with the default values and with every optional part on", async () => {
    const lint = await helm(["lint", CHART, "--strict"]);
    expect(lint.stdout).toContain("1 chart(s) linted, 0 chart(s) failed");
    const all = await helm(["lint", CHART, "--strict", "--set", "rbac.scope=cluster,metrics.serviceMonitor.enabled=true,metrics.podMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboards.enabled=true"]);
    expect(all.stdout).toContain("0 chart(s) failed");
  });
});

describe("helm template with the default values", () => {
  it("renders a two-replica, leader-elected controller with probes, requests and a restricted security context", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS));
    const deployment = findManifest(ms, "Deployment") as Deployment;
    expect(deployment.metadata.namespace).toBe(NS);
    expect(deployment.spec.replicas).toBe(2);
    const c = controller(ms);
    expect(c.image).toBe("ghcr.io/leviath/leviath-operator:0.1.0");
    expect(c.args[0]).toBe("controller");
    expect(c.args).toEqual(expect.arrayContaining(["--leader-elect", `--leader-election-namespace=${NS}`, "--leader-election-id=leviath-operator", "--sidecar-image=ghcr.io/leviath/leviath-operator:0.1.0"]));
    // The chart's default runtime is the reference runtime, leviath agent.
    expect([c.args.includes("--runtime-image=ghcr.io/leviath/leviath-agent:0.1.0"), c.args.includes("--warm-pools")]).toEqual([true, false]);
    expect(c.livenessProbe.httpGet.path).toBe("/healthz");
    expect(c.readinessProbe.httpGet.path).toBe("/readyz");
    expect(c.resources.requests).toEqual({ cpu: "100m", memory: "128Mi" });
    // V8's young generation is set, not sized from the memory limit (which would give 1 MiB semi-spaces).
    expect(c.env?.find((e) => e.name === "NODE_OPTIONS")?.value).toBe("--max-semi-space-size=4");
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ["ALL"] } });
    expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } });

    const pdb = findManifest(ms, "PodDisruptionBudget") as Manifest & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } };
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
  });

  it("creates the restricted sandbox namespace and the cluster LeviathPolicy, and nothing for Prometheus", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS));
    const sandbox = findManifest(ms, "Namespace", "leviath-sandbox");
    expect(sandbox.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    expect(sandbox.metadata.annotations?.["helm.sh/resource-policy"]).toBe("keep");
    const policy = findManifest(ms, "LeviathPolicy", "cluster") as Manifest & { spec: unknown };
    expect(policy.spec).toEqual({
      sandbox: { kind: "container", image: "debian:bookworm-slim", onUnavailable: "error" }, security: { taintTracking: true }, integrity: { enforce: true },
      // Safe by default: the enforcement check runs, its probe pods in the sandbox namespace.
      networkEnforcement: { verify: true, namespace: "leviath-sandbox", onUnverified: "warn" },
    });
    for (const kind of ["ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"]) expect(ms.filter((m) => m.kind === kind)).toEqual([]);
  });

  it("turns on the validating webhook with the controller's own certificates: fail closed for Agents, Runs and Approvals", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS));
    const vwc = findManifest(ms, "ValidatingWebhookConfiguration", "leviath-operator-specs") as Manifest & { webhooks: { name: string; failurePolicy: string; rules: { resources: string[] }[]; clientConfig: { service: { name: string; namespace: string } } }[] };
    expect(vwc.webhooks.map((w) => [w.name, w.failurePolicy, w.rules[0]!.resources])).toEqual([
      ["specs.leviath.dev", "Fail", ["agents", "runs", "approvals"]],
      ["policy.leviath.dev", "Ignore", ["leviathpolicies"]],
    ]);
    for (const w of vwc.webhooks) expect(w.clientConfig.service).toMatchObject({ name: "leviath-operator-webhook", namespace: NS });
    expect(controller(ms).args).toEqual(expect.arrayContaining([
      "--webhook-bind-address=0.0.0.0:9443", `--webhook-secret=${NS}/leviath-operator-webhook-tls`, "--webhook-configuration=leviath-operator-specs",
    ]));
    expect(ms.filter((m) => m.kind === "Certificate" || m.kind === "Issuer")).toEqual([]);
    const off = parseManifests(await renderChart("leviath-operator", NS, ["--set", "admission.webhook.enabled=false"]));
    expect(off.filter((m) => m.kind === "ValidatingWebhookConfiguration")).toEqual([]);
    expect(controller(off).args.filter((a) => a.startsWith("--webhook"))).toEqual([]);
  });

  it("probes enforcement in a named namespace, in a document's, and not at all when a document leaves it out", async () => {
    const spec = async (args: string[]) => (findManifest(parseManifests(await renderChart("leviath-operator", NS, args)), "LeviathPolicy") as Manifest & { spec: Record<string, unknown> }).spec;
    expect((await spec(["--set", "policy.spec.networkEnforcement.namespace=probes,policy.spec.networkEnforcement.onUnverified=refuse"]))["networkEnforcement"])
      .toEqual({ verify: true, namespace: "probes", onUnverified: "refuse" });
    const dir = mkdtempSync(join(tmpdir(), "lev-doc-"));
    const doc = (s: Record<string, unknown>) => {
      const file = join(dir, `${Object.keys(s).join("-") || "empty"}.yaml`);
      writeFileSync(file, JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: s }));
      return ["--set", "sandboxNamespace.name=team-sandbox", "--set-file", `policy.document=${file}`];
    };
    expect((await spec(doc({ networkEnforcement: { verify: true } })))["networkEnforcement"]).toEqual({ verify: true, namespace: "team-sandbox" });
    expect(await spec(doc({ security: { taintTracking: true } }))).toEqual({ security: { taintTracking: true } });
  });

  it("grants writes only in the sandbox namespace, reads what the informers watch, and of secrets only get (credential metadata) where it writes", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS));
    const read = rulesOf(findManifest(ms, "ClusterRole", "leviath-operator-read"));
    const write = rulesOf(findManifest(ms, "ClusterRole", "leviath-operator-write"));
    const writeBindings = ms.filter((m) => m.metadata.name === "leviath-operator-write" && m.kind !== "ClusterRole");
    expect(writeBindings.map((b) => `${b.kind}/${b.metadata.namespace}`)).toEqual(["RoleBinding/leviath-sandbox"]);
    for (const [name, res] of Object.entries(RESOURCES)) {
      // Leases are the leader's, Approvals the sidecar's, Secrets are read one by one (metadata), never watched.
      if (name === "lease" || name === "approval" || name === "secret") continue;
      for (const verb of ["list", "watch"]) expect(allows(read, res.group, res.plural, verb), `${verb} ${res.plural}`).toBe(true);
    }
    // The sidecars' scrape token: create (RBAC cannot narrow it by name) and get of that one Secret, in the release namespace only.
    const scrapeToken = findManifest(ms, "Role", "leviath-operator-sidecar-metrics");
    expect(scrapeToken.metadata.namespace).toBe(NS);
    expect(rulesOf(scrapeToken).map((r) => [r.resources, r.verbs, (r as Rule & { resourceNames?: string[] }).resourceNames])).toEqual([[["secrets"], ["create"], undefined], [["secrets"], ["get"], ["leviath-operator-sidecar-metrics"]]]);
    // The webhook's certificate (on by default): create (as above) and get/update of that one Secret, and its own
    // webhook configuration's caBundle.
    const webhookTls = findManifest(ms, "Role", "leviath-operator-webhook-tls");
    expect(webhookTls.metadata.namespace).toBe(NS);
    expect(rulesOf(webhookTls).map((r) => [r.resources, r.verbs, r.resourceNames])).toEqual([[["secrets"], ["create"], undefined], [["secrets"], ["get", "update"], ["leviath-operator-webhook-tls"]]]);
    expect(rulesOf(findManifest(ms, "ClusterRole", "leviath-operator-webhook-ca"))).toEqual([
      { apiGroups: ["admissionregistration.k8s.io"], resources: ["validatingwebhookconfigurations"], resourceNames: ["leviath-operator-specs"], verbs: ["get", "update"] },
    ]);
    const all = ms.filter((m) => (m.kind === "ClusterRole" || m.kind === "Role") && m !== scrapeToken && m !== webhookTls).flatMap(rulesOf);
    // Non-resource rules: only the reader role of secure metrics, to bind to a scraper, which reads /metrics.
    expect(all.filter((r) => r.resources === undefined)).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
    const every = all.filter((r) => r.resources !== undefined);
    for (const r of every) {
      expect([...r.verbs, ...r.resources, ...r.apiGroups]).not.toContain("*");
      if (r.resources.includes("secrets")) expect({ resources: r.resources, verbs: r.verbs }).toEqual({ resources: ["secrets"], verbs: ["get"] });
      expect(r.verbs).not.toContain("escalate");
      expect(r.verbs).not.toContain("bind");
    }
    expect(read.some((r) => r.resources.includes("secrets"))).toBe(false);
    expect(allows(write, "", "secrets", "get")).toBe(true);
    // Kubernetes lets the controller create the per-Run sidecar Roles only with permissions it holds there.
    const ref = { name: "r", namespace: "leviath-sandbox", uid: "u" };
    const sidecarRole = buildRole(ref, "a", ["r-engine", "r-sbx-1"]) as unknown as { rules: Rule[] };
    const bound = { metadata: { name: "ok", uid: "a-uid", labels: { "leviath.dev/run-uid": "u" } }, spec: { runRef: { name: "r" }, approvalId: "gate-1", decision: "allowOnce" } };
    const reader = buildApprovalRelayObjects(ref, "a", [bound]).role as unknown as { rules: Rule[] };
    expect(reader.rules).toHaveLength(1);
    // The approval relay and the NetworkPolicy are replaced whole (PUT), which is `update`.
    expect(allows(write, "", "configmaps", "update")).toBe(true);
    expect(allows(write, "networking.k8s.io", "networkpolicies", "update")).toBe(true);
    // A Run adopting a warm pool pod replaces (PUT) the pod, its claim and its identity: `update` on each kind.
    const adopted = listAdoptedObjects("p");
    for (const kind of [adopted.pod, adopted.claim, ...adopted.identity].map((o) => o.split("/")[0])) {
      const res = Object.values(RESOURCES).find((r) => r.kind === kind)!;
      expect(allows(write, res.group, res.plural, "update"), `update ${res.plural}`).toBe(true);
    }
    for (const rule of [...sidecarRole.rules, ...reader.rules]) {
      for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) {
        expect(allows([...read, ...write], group, resource, verb), `${verb} ${resource}`).toBe(true);
      }
    }
    const leader = rulesOf(findManifest(ms, "Role", "leviath-operator-leader"));
    expect(allows(leader, "coordination.k8s.io", "leases", "update", "leviath-operator")).toBe(true);
    expect(allows(leader, "coordination.k8s.io", "leases", "update", "someone-elses")).toBe(false);
  });
});

describe("helm template with non-default values", () => {
  it("cluster-wide mode binds the write role cluster-wide and the PodMonitor watches every namespace", async () => {
    const ms = parseManifests(await renderChart("ops", "ops", ["--set", "rbac.scope=cluster,metrics.podMonitor.enabled=true"]));
    const bindings = ms.filter((m) => m.metadata.name === "ops-leviath-operator-write" && m.kind !== "ClusterRole");
    expect(bindings.map((b) => b.kind)).toEqual(["ClusterRoleBinding"]);
    const podMonitor = findManifest(ms, "PodMonitor") as Manifest & { spec: { namespaceSelector: unknown; podMetricsEndpoints: { port: string }[] } };
    expect(podMonitor.spec.namespaceSelector).toEqual({ any: true });
    expect(podMonitor.spec.podMetricsEndpoints[0]!.port).toBe("metrics");
  });

  it("namespaced mode with more namespaces binds the write role in each of them", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", "rbac.namespaces={team-a,team-b,leviath-sandbox}", "--set", "metrics.podMonitor.enabled=true"]));
    const bindings = ms.filter((m) => m.metadata.name === "leviath-operator-write" && m.kind === "RoleBinding");
    expect(bindings.map((b) => b.metadata.namespace)).toEqual(["leviath-sandbox", "team-a", "team-b"]);
    const podMonitor = findManifest(ms, "PodMonitor") as Manifest & { spec: { namespaceSelector: unknown } };
    expect(podMonitor.spec.namespaceSelector).toEqual({ matchNames: ["leviath-sandbox", "team-a", "team-b"] });
  });

  it("by default: secure metrics (HTTPS, token review args, a generated TLS Secret, the review RBAC, a reader role, an https ServiceMonitor)", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", "metrics.serviceMonitor.enabled=true"]));
    const container = (findManifest(ms, "Deployment") as Deployment).spec.template.spec.containers[0]!;
    expect(container.args).toEqual(expect.arrayContaining(["--metrics-secure", "--metrics-cert-dir=/etc/leviath/metrics-tls"]));
    const secret = ms.find((m) => m.kind === "Secret" && m.metadata.name === "leviath-operator-metrics-tls") as Manifest & { type: string; data: Record<string, string> };
    expect(secret.type).toBe("kubernetes.io/tls");
    const pem = Buffer.from(secret.data["tls.crt"]!, "base64").toString("utf8");
    expect(pem).toContain("BEGIN CERTIFICATE");
    const subject = spawnSync("openssl", ["x509", "-noout", "-ext", "subjectAltName"], { input: pem, encoding: "utf8" }).stdout;
    expect(subject).toContain(`DNS:leviath-operator-metrics.${NS}.svc`);
    const roles = ms.filter((m) => m.kind === "ClusterRole");
    expect(rulesOf(roles.find((r) => r.metadata.name === "leviath-operator-metrics-auth")!)).toEqual([
      { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
      { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
    ]);
    expect((roles.find((r) => r.metadata.name === "leviath-operator-metrics-reader") as Manifest & { rules: unknown[] }).rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
    const sm = findManifest(ms, "ServiceMonitor") as Manifest & { spec: { endpoints: Record<string, unknown>[] } };
    expect(sm.spec.endpoints[0]).toMatchObject({
      scheme: "https", bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
      tlsConfig: { serverName: `leviath-operator-metrics.${NS}.svc`, ca: { secret: { name: "leviath-operator-metrics-tls", key: "tls.crt" } } },
    });
    const plain = parseManifests(await renderChart("leviath-operator", NS, ["--set", "metrics.secure.enabled=false"]));
    expect((findManifest(plain, "Deployment") as Deployment).spec.template.spec.containers[0]!.args).not.toContain("--metrics-secure");
    expect(plain.filter((m) => m.metadata.name.includes("metrics-auth"))).toEqual([]);
  });

  it("with metrics.secure.generateCertificate=false (as deploy/ is rendered): no key in the output, the controller's own certificate, unverified", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", "metrics.secure.generateCertificate=false,metrics.serviceMonitor.enabled=true"]));
    const pod = (findManifest(ms, "Deployment") as Deployment).spec.template.spec;
    expect(pod.containers[0]!.args).toContain("--metrics-secure");
    expect(pod.containers[0]!.args.filter((a) => a.startsWith("--metrics-cert-dir"))).toEqual([]);
    expect(ms.filter((m) => m.kind === "Secret")).toEqual([]);
    expect(JSON.stringify(ms)).not.toContain("PRIVATE KEY");
    const sm = findManifest(ms, "ServiceMonitor") as Manifest & { spec: { endpoints: Record<string, unknown>[] } };
    expect(sm.spec.endpoints[0]).toMatchObject({ scheme: "https", tlsConfig: { insecureSkipVerify: true } });
  });

  it("by default: the controller keeps the sidecars' scrape token in one Secret it may get by name, and the PodMonitor presents it", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", "metrics.podMonitor.enabled=true"]));
    const container = (findManifest(ms, "Deployment") as Deployment).spec.template.spec.containers[0]!;
    expect(container.args).toContain("--sidecar-metrics-token-secret=leviath-operator-sidecar-metrics");
    const role = findManifest(ms, "Role", "leviath-operator-sidecar-metrics");
    expect(role.metadata.namespace).toBe(NS);
    expect(rulesOf(role)).toEqual([
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["leviath-operator-sidecar-metrics"], verbs: ["get"] },
    ]);
    const podMonitor = findManifest(ms, "PodMonitor") as Manifest & { spec: { podMetricsEndpoints: Record<string, unknown>[] } };
    expect(podMonitor.spec.podMetricsEndpoints[0]).toMatchObject({
      port: "metrics", authorization: { type: "Bearer", credentials: { name: "leviath-operator-sidecar-metrics", key: "token" } },
    });
    const off = parseManifests(await renderChart("leviath-operator", NS, ["--set", "metrics.sidecar.enabled=false"]));
    expect((findManifest(off, "Deployment") as Deployment).spec.template.spec.containers[0]!.args.filter((a) => a.startsWith("--sidecar-metrics"))).toEqual([]);
    expect(off.filter((m) => m.metadata.name.endsWith("sidecar-metrics"))).toEqual([]);
  });

  it("renders the ServiceMonitor, the PrometheusRule and the Grafana dashboard when asked", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboards.enabled=true,metrics.serviceMonitor.labels.release=kube-prometheus"]));
    const sm = findManifest(ms, "ServiceMonitor") as Manifest & { spec: { endpoints: { port: string }[] } };
    expect(sm.metadata.labels?.["release"]).toBe("kube-prometheus");
    expect(sm.spec.endpoints[0]!.port).toBe("metrics");
    const service = findManifest(ms, "Service", "leviath-operator-metrics") as Manifest & { spec: { ports: { name: string; targetPort: string }[] } };
    expect(service.spec.ports[0]).toMatchObject({ name: "metrics", targetPort: "metrics" });
    const rule = findManifest(ms, "PrometheusRule") as Manifest & { spec: { groups: { rules: { alert: string }[] }[] } };
    const alerts = rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts).toEqual(expect.arrayContaining(["LeviathBlockedToolCallsSpiking", "LeviathApprovalWaitingTooLong", "LeviathReconcileErrors"]));
    const dashboard = findManifest(ms, "ConfigMap") as Manifest & { data: Record<string, string> };
    expect(dashboard.metadata.labels?.["grafana_dashboard"]).toBe("1");
    expect((JSON.parse(dashboard.data["leviath.json"]!) as { uid: string }).uid).toBe("leviath-operator");
  });

  it("takes the policy from a document that `leviath import config.toml policy.toml` printed", async () => {
    const cli = spawnSync(process.execPath, [join(REPO_ROOT, "bin/leviath"), "import", "test/fixtures/config/config.toml", "test/fixtures/config/policy.toml", "--namespace", "team-a"], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(cli.status, cli.stderr).toBe(0);
    const file = join(mkdtempSync(join(tmpdir(), "leviath-chart-")), "policy.yaml");
    writeFileSync(file, cli.stdout);
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set-file", `policy.document=${file}`]));
    const policy = findManifest(ms, "LeviathPolicy", "cluster") as Manifest & { spec: unknown };
    expect(policy.spec).toEqual((parse(cli.stdout) as { spec: unknown }).spec);
    expect(JSON.stringify(policy.spec)).toContain("team-a/cto");
  });

  it("pins images by digest, overrides the sidecar image, passes a runtime image and turns on warm pools", async () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", `image.digest=${digest},sidecar.image.repository=registry.internal/leviath,sidecar.image.tag=9.9.9,controller.runtimeImage=registry.internal/runtime:1,controller.warmPools=true`]));
    const c = controller(ms);
    expect(c.image).toBe(`ghcr.io/leviath/leviath-operator@${digest}`);
    expect(c.args).toContain(`--sidecar-image=registry.internal/leviath@${digest}`);
    expect([c.args.includes("--runtime-image=registry.internal/runtime:1"), c.args.includes("--warm-pools")]).toEqual([true, true]);
  });

  it("controller.nodeOptions empty sets no NODE_OPTIONS, and another value is passed as given", async () => {
    const none = controller(parseManifests(await renderChart("leviath-operator", NS, ["--set", "controller.nodeOptions="])));
    expect(none.env?.some((e) => e.name === "NODE_OPTIONS")).toBe(false);
    const other = controller(parseManifests(await renderChart("leviath-operator", NS, ["--set", "controller.nodeOptions=--max-semi-space-size=8 --max-old-space-size=384"])));
    expect(other.env?.find((e) => e.name === "NODE_OPTIONS")?.value).toBe("--max-semi-space-size=8 --max-old-space-size=384");
  });

  it("one replica without leader election has no PodDisruptionBudget and no Lease role", async () => {
    const ms = parseManifests(await renderChart("leviath-operator", NS, ["--set", "controller.replicas=1,controller.leaderElection.enabled=false"]));
    const ownSecrets = ["leviath-operator-sidecar-metrics", "leviath-operator-webhook-tls"];
    expect(ms.filter((m) => m.kind === "PodDisruptionBudget" || (m.kind === "Role" && !ownSecrets.includes(m.metadata.name)))).toEqual([]);
    expect(controller(ms).args).not.toContain("--leader-elect");
  });
});

describe("bad values fail at install with a message that names them", () => {
  const cases: [string, string[], string[]][] = [
    ["zero replicas", ["--set", "controller.replicas=0"], ["/controller/replicas", "minimum"]],
    ["an unknown RBAC scope", ["--set", "rbac.scope=global"], ["/rbac/scope", "'namespaced', 'cluster'"]],
    ["a misspelt key", ["--set", "controller.replica=2"], ["/controller", "'replica' not allowed"]],
    ["node options that are not flags", ["--set", "controller.nodeOptions=-r ./preload.js"], ["/controller/nodeOptions", "does not match pattern"]],
    ["a tag where a digest belongs", ["--set", "image.digest=latest"], ["/image/digest", "does not match pattern"]],
    ["a duration that is a number", ["--set", "metrics.serviceMonitor.interval=5"], ["/metrics/serviceMonitor/interval", "want string"]],
    ["an invalid namespace name", ["--set", "sandboxNamespace.name=Team_A"], ["/sandboxNamespace/name", "does not match pattern"]],
    ["two replicas without a lease", ["--set", "controller.leaderElection.enabled=false"], ["needs controller.leaderElection.enabled"]],
    ["a renew deadline past the lease", ["--set", "controller.leaderElection.renewDeadlineSeconds=20"], ["renewDeadlineSeconds must be shorter"]],
    ["an upstream config.toml string", ["--set", "policy.configToml=[security]"], ["policy.configToml", "leviath import config.toml", "policy.document"]],
    ["a ServiceMonitor without the Service", ["--set", "metrics.serviceMonitor.enabled=true,metrics.service.enabled=false"], ["needs metrics.service.enabled"]],
    ["a PodMonitor without the sidecars' scrape token", ["--set", "metrics.podMonitor.enabled=true,metrics.sidecar.enabled=false"], ["needs metrics.sidecar.enabled"]],
  ];
  for (const [what, args, words] of cases) {
    it(`refuses ${what}`, async () => {
      const r = await renderChartResult(args);
      expect(r.exitCode).not.toBe(0);
      for (const w of words) expect(r.stderr).toContain(w);
    });
  }

  it("refuses a policy document that is not a LeviathPolicy", async () => {
    const file = join(REPO_ROOT, "examples/agent.yaml");
    const r = await renderChartResult(["--set-file", `policy.document=${file}`]);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain('policy.document must be a LeviathPolicy');
    expect(r.stderr).toContain('not kind "Agent"');
  });
});

describe("generated packaging", () => {
  it("the chart's CRDs are crds/ exactly", () => {
    const files = readdirSync(join(REPO_ROOT, "crds")).sort();
    expect(readdirSync(join(CHART, "crds")).sort()).toEqual(files);
    for (const f of files) expect(readFileSync(join(CHART, "crds", f), "utf8"), f).toBe(readFileSync(join(REPO_ROOT, "crds", f), "utf8"));
  });

  it("deploy/ is what scripts/render-deploy makes from the chart", () => {
    const r = spawnSync("bash", [join(REPO_ROOT, "scripts/render-deploy"), "--check"], { cwd: REPO_ROOT, encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const ms = parseManifests(readFileSync(join(REPO_ROOT, "deploy/leviath-operator.yaml"), "utf8"));
    expect(ms.map((m) => m.kind)).toEqual(expect.arrayContaining(["Namespace", "Deployment", "ClusterRole", "LeviathPolicy"]));
    expect(findManifest(ms, "Namespace", "leviath-system").metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    expect(parseManifests(readFileSync(join(REPO_ROOT, "deploy/crds.yaml"), "utf8")).map((m) => m.metadata.name).sort())
      .toEqual(["agents.leviath.dev", "approvals.leviath.dev", "leviathpolicies.leviath.dev", "runs.leviath.dev"]);
  });
});
