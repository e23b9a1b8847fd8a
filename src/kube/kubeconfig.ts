// Reads a kubeconfig (or the in-cluster account) into what a plain HTTPS client needs, without
// @kubernetes/client-node: its KubeConfig imports the library's whole generated API and model (about 80 MiB of a
// process's RSS). Credentials that need a plugin (exec, auth-provider) are not read here: the caller falls back to
// the library for those (see connect.ts).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import type * as Yaml from "yaml";
import { z } from "zod";

/** Where a pod's ServiceAccount credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** How requests authenticate: a bearer token (read again from its file each time), client certificates, or none. */
export type KubeAuth =
  | { kind: "none" }
  | { kind: "token"; token: string }
  | { kind: "tokenFile"; file: string }
  | { kind: "basic"; username: string; password: string };

/** What a plain HTTPS client needs to reach and authenticate to one API server. */
export interface KubeAccess {
  /** The server's base URL, without a trailing slash. */
  readonly server: string;
  /** The context's namespace, when it names one. */
  readonly namespace?: string;
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly insecureSkipTlsVerify: boolean;
  readonly tlsServerName?: string;
  readonly auth: KubeAuth;
}

/** The kubeconfig fields this reader understands; anything else is ignored as kubectl ignores it. */
const ClusterSchema = z.object({
  server: z.string(),
  "certificate-authority": z.string().optional(),
  "certificate-authority-data": z.string().optional(),
  "insecure-skip-tls-verify": z.boolean().optional(),
  "tls-server-name": z.string().optional(),
  "proxy-url": z.string().optional(),
}).passthrough();
const UserSchema = z.object({
  token: z.string().optional(),
  tokenFile: z.string().optional(),
  "client-certificate": z.string().optional(),
  "client-certificate-data": z.string().optional(),
  "client-key": z.string().optional(),
  "client-key-data": z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
  exec: z.unknown().optional(),
  "auth-provider": z.unknown().optional(),
}).passthrough();
const KubeconfigSchema = z.object({
  "current-context": z.string().optional(),
  clusters: z.array(z.object({ name: z.string(), cluster: ClusterSchema })).nullish(),
  users: z.array(z.object({ name: z.string(), user: UserSchema.nullish() })).nullish(),
  contexts: z.array(z.object({ name: z.string(), context: z.object({ cluster: z.string(), user: z.string().optional(), namespace: z.string().optional() }).passthrough() })).nullish(),
}).passthrough();

/** The outcome of reading: access for the plain client, or why the library must handle this kubeconfig. */
export type KubeAccessResult = { ok: true; access: KubeAccess } | { ok: false; needsLibrary: string };

/** The access `loadKubeConfig` would pick: the file given, else `~/.kube/config`, else the in-cluster account. */
export function readKubeAccess(file: string | undefined, env: NodeJS.ProcessEnv = process.env): KubeAccessResult {
  if (file) return readKubeconfigFile(file);
  const home = join(env["HOME"] ?? homedir(), ".kube", "config");
  if (existsSync(home)) return readKubeconfigFile(home);
  const host = env["KUBERNETES_SERVICE_HOST"];
  const port = env["KUBERNETES_SERVICE_PORT"];
  if (host && port) return { ok: true, access: readInCluster(host, port) };
  throw new Error("no Kubernetes cluster configured (set --kubeconfig or KUBECONFIG, or run in a cluster)");
}

/** The in-cluster account: the mounted CA and namespace, and the token file read again on each request (it rotates). */
function readInCluster(host: string, port: string): KubeAccess {
  const serverHost = host.includes(":") ? `[${host}]` : host;
  const nsFile = join(SERVICE_ACCOUNT_DIR, "namespace");
  return {
    server: `https://${serverHost}:${port}`,
    ...(existsSync(nsFile) ? { namespace: readFileSync(nsFile, "utf8").trim() } : {}),
    ca: readFileSync(join(SERVICE_ACCOUNT_DIR, "ca.crt")),
    insecureSkipTlsVerify: false,
    auth: { kind: "tokenFile", file: join(SERVICE_ACCOUNT_DIR, "token") },
  };
}

type User = z.infer<typeof UserSchema>;
type Cluster = z.infer<typeof ClusterSchema>;
type Bytes = (data: string | undefined, path: string | undefined, what: string) => Buffer | undefined;

/** The CA, the client certificate and key, and how the server's certificate is checked. */
function readTls(cluster: z.infer<typeof ClusterSchema>, user: User | undefined, bytes: Bytes): Pick<KubeAccess, "ca" | "cert" | "key" | "insecureSkipTlsVerify" | "tlsServerName"> {
  const ca = bytes(cluster["certificate-authority-data"], cluster["certificate-authority"], "certificate-authority");
  const cert = bytes(user?.["client-certificate-data"], user?.["client-certificate"], "client-certificate");
  const key = bytes(user?.["client-key-data"], user?.["client-key"], "client-key");
  return {
    ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}),
    insecureSkipTlsVerify: cluster["insecure-skip-tls-verify"] ?? false,
    ...(cluster["tls-server-name"] ? { tlsServerName: cluster["tls-server-name"] } : {}),
  };
}

/** A bearer token, a token file (relative to the kubeconfig's directory), a password, or nothing. */
function readAuth(user: User | undefined, base: string): KubeAuth {
  if (user?.token !== undefined) return { kind: "token", token: user.token };
  if (user?.tokenFile !== undefined) return { kind: "tokenFile", file: isAbsolute(user.tokenFile) ? user.tokenFile : join(base, user.tokenFile) };
  if (user?.username !== undefined && user.password !== undefined) return { kind: "basic", username: user.username, password: user.password };
  return { kind: "none" };
}

/**
 * A kubeconfig's text as data. JSON (which is YAML too) is read without the YAML parser, loaded only for a YAML
 * file: a controller in its pod reads the mounted account, not a kubeconfig, and need not carry it.
 */
function parseKubeconfigText(text: string): unknown {
  if (text.trimStart().startsWith("{")) {
    try {
      return JSON.parse(text);
    } catch {
      // A YAML flow mapping that is not JSON: the YAML parser reads it, or says what is wrong.
    }
  }
  return (createRequire(import.meta.url)("yaml") as typeof Yaml).parse(text);
}

/** One kubeconfig file's current context. Relative paths inside it are relative to the file, as kubectl reads them. */
export function readKubeconfigFile(file: string): KubeAccessResult {
  const { context, cluster, user } = selectCurrentContext(parseKubeconfig(file), file);
  if (user?.exec !== undefined || user?.["auth-provider"] !== undefined) return { ok: false, needsLibrary: `user '${context.user}' authenticates with a plugin` };
  if (cluster["proxy-url"] !== undefined) return { ok: false, needsLibrary: `cluster '${context.cluster}' is reached through a proxy` };
  const base = dirname(file);
  const bytes: Bytes = (data, path, what) => {
    if (data !== undefined) return Buffer.from(data, "base64");
    if (path === undefined) return undefined;
    const abs = isAbsolute(path) ? path : join(base, path);
    try {
      return readFileSync(abs);
    } catch (err) {
      throw new Error(`kubeconfig ${file}: ${what} ${abs}: ${(err as Error).message}`, { cause: err });
    }
  };
  const auth = readAuth(user, base);
  return { ok: true, access: { server: cluster.server.replace(/\/+$/, ""), ...(context.namespace ? { namespace: context.namespace } : {}), ...readTls(cluster, user, bytes), auth } };
}

type Kubeconfig = z.infer<typeof KubeconfigSchema>;
type Context = NonNullable<NonNullable<Kubeconfig["contexts"]>[number]["context"]>;

/** The file read and checked against the schema; an invalid one names its first wrong field. */
function parseKubeconfig(file: string): Kubeconfig {
  const parsed = KubeconfigSchema.safeParse(parseKubeconfigText(readFileSync(file, "utf8")));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(`kubeconfig ${file}: ${issue ? issue.path.join(".") : ""}: ${issue?.message ?? "invalid"}`);
}

/** The current context with the cluster and user it names; a context or cluster that is not defined is an error. */
function selectCurrentContext(cfg: Kubeconfig, file: string): { context: Context; cluster: Cluster; user: User | undefined } {
  const contextName = cfg["current-context"];
  const context = cfg.contexts?.find((c) => c.name === contextName)?.context;
  if (!context) throw new Error(`no Kubernetes cluster configured: kubeconfig ${file} has no context '${contextName ?? ""}' (its current-context)`);
  const cluster = cfg.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (!cluster) throw new Error(`kubeconfig ${file}: context '${contextName}' names cluster '${context.cluster}', which it does not define`);
  const user = context.user === undefined ? undefined : cfg.users?.find((u) => u.name === context.user)?.user ?? undefined;
  return { context, cluster, user };
}
