// `leviath model-server` in the demo's cluster (issue 44): a Deployment of the operator's own image (no third-party
// image) with two containers, one answering from a script a user edits (ConfigMap `model-script`, key
// `script.yaml`; the demo's story, repeated, so examples/run.yaml can be applied again), one echoing (for an Agent or a
// client of your own: every request is answered `echo: <what it sent last>`). A Service names them. The demo's node
// runs no kube-proxy and no cluster DNS, so a Service's cluster IP is not routed from pods there: the pod runs on the
// node's network and listens on the node's address, which the credential Secrets name; on a cluster with both, the
// Service's DNS name does the same. The credential Secrets are made ready: `model-provider` (examples/run.yaml's) for
// the script, `echo-model` for the echo, each with an Anthropic and an OpenAI key and base URL.
import { stringify } from "yaml";
import { kubectl, waitFor } from "../../integration/harness/index.ts";
import { getJson } from "./kube-json.ts";

/** The namespace of the stand-in model. */
export const MODEL_NAMESPACE = "leviath-model";
/** The script's port and the echo's. */
export const SCRIPT_PORT = 8787;
export const ECHO_PORT = 8788;

export interface ModelServerOptions {
  /** leviath-operator, as the node has it. */
  readonly image: string;
  /** The node's address as pods reach it. */
  readonly nodeAddress: string;
  /** The script (YAML text), as `leviath model-server --script` reads it. */
  readonly script: string;
}

/** The base URLs the Secrets give, by port: Anthropic's (`http://HOST:PORT`) and OpenAI's (`.../v1`). */
export function modelUrls(nodeAddress: string, port: number): { anthropic: string; openai: string } {
  return { anthropic: `http://${nodeAddress}:${port}`, openai: `http://${nodeAddress}:${port}/v1` };
}

const labels = { "app.kubernetes.io/name": "model-server", "app.kubernetes.io/part-of": "leviath-demo" };

/** The namespace, the script, the Deployment and the Service. */
export function buildModelServerObjects(o: ModelServerOptions): Record<string, unknown>[] {
  const meta = (name: string) => ({ name, namespace: MODEL_NAMESPACE, labels });
  const container = (name: string, port: number, mode: string[]) => ({
    name, image: o.image, imagePullPolicy: "Never",
    args: ["model-server", ...mode, "--listen", `$(NODE_ADDRESS):${port}`],
    env: [{ name: "NODE_ADDRESS", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } }],
    ports: [{ name, containerPort: port }],
    readinessProbe: { tcpSocket: { port }, periodSeconds: 2 },
    securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
    ...(mode[0] === "--script" ? { volumeMounts: [{ name: "script", mountPath: "/etc/model-server", readOnly: true }] } : {}),
  });
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: MODEL_NAMESPACE, labels } },
    { apiVersion: "v1", kind: "ConfigMap", metadata: meta("model-script"), data: { "script.yaml": o.script } },
    {
      apiVersion: "apps/v1", kind: "Deployment", metadata: meta("model-server"),
      spec: {
        replicas: 1, selector: { matchLabels: { "app.kubernetes.io/name": "model-server" } },
        // One pod on the node's network at a time: the new one can listen only once the old one stopped.
        strategy: { type: "Recreate" },
        template: {
          metadata: { labels },
          spec: {
            hostNetwork: true,
            automountServiceAccountToken: false,
            containers: [container("script", SCRIPT_PORT, ["--script", "/etc/model-server/script.yaml"]), container("echo", ECHO_PORT, ["--echo"])],
            volumes: [{ name: "script", configMap: { name: "model-script" } }],
          },
        },
      },
    },
    {
      apiVersion: "v1", kind: "Service", metadata: meta("model-server"),
      spec: { selector: { "app.kubernetes.io/name": "model-server" }, ports: [{ name: "script", port: SCRIPT_PORT }, { name: "echo", port: ECHO_PORT }] },
    },
  ];
}

/** A credential Secret for the stand-in at `port` (any key is taken; the base URLs are what matter). */
export function buildModelSecret(name: string, namespace: string, nodeAddress: string, port: number): Record<string, unknown> {
  const urls = modelUrls(nodeAddress, port);
  return {
    apiVersion: "v1", kind: "Secret", metadata: { name, namespace, labels: { "leviath.dev/credential": "true" } },
    stringData: {
      ANTHROPIC_API_KEY: "sk-ant-demo-placeholder", ANTHROPIC_BASE_URL: urls.anthropic,
      OPENAI_API_KEY: "sk-demo-placeholder", OPENAI_BASE_URL: urls.openai,
    },
  };
}

/** Applies the stand-in and waits until both its servers listen. */
export async function deployModelServer(o: ModelServerOptions): Promise<void> {
  await kubectl(["apply", "-f", "-"], { input: buildModelServerObjects(o).map((x) => stringify(x)).join("---\n") });
  await waitFor(async () => {
    type Pods = { items: { status?: { conditions?: { type: string; status: string }[] } }[] };
    const pods = await getJson<Pods>(["get", "pods", "-n", MODEL_NAMESPACE, "-l", "app.kubernetes.io/name=model-server"]);
    return pods.items.some((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
  }, { timeoutMs: 180_000, intervalMs: 1000, description: "the model-server pod Ready" });
}
