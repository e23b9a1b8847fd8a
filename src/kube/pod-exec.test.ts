// pods/exec without @kubernetes/client-node, against a real local WebSocket server (ws) behind a real TLS server that
// wants a client certificate: the path and query, the subprotocol, the TLS server name, the client certificate and the
// bearer token of the kubeconfig; the channel framing both ways (v5 and v4), the status, refusals and protocol errors.
// The same server also answers the pod read of the container-running wait, which comes before any upgrade.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { createServer, type Server } from "node:https";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { ADMIN_USER, generateCertificates } from "../../test/integration/harness/generate-certificates.ts";
import { createKubeClient, loadKubeConfig } from "./client.ts";
import { connectKube, type ClusterClient } from "./connect.ts";
import { buildChannelFrame, EXEC_CHANNEL, EXEC_SUBPROTOCOLS, type ExecStatus } from "./exec-channel.ts";
import { createPodExec } from "./pod-exec.ts";

const TOKEN = "exec-test-token";
const SERVER_NAME = "kubernetes.default.svc";
const EXIT_3: ExecStatus = { status: "Failure", reason: "NonZeroExitCode", message: "command terminated with non-zero exit code", details: { causes: [{ reason: "ExitCode", message: "3" }] } };

type Seen = { url: string; authorization: string | undefined; servername: string | false | null; clientCn: unknown; protocol: string; received: Buffer[]; closed: Promise<void> };
type Behaviour = { protocols: readonly string[]; refuse?: { code: number; body: string }; podRunning: boolean; onConnection?: (ws: WebSocket) => void };

let dir: string;
let server: Server;
let kubeconfig: string;
let behaviour: Behaviour;
let seen: Seen[];

const runningPod = (running: boolean) => ({
  metadata: { name: "p" }, spec: { nodeName: "n", containers: [{ name: "c" }] },
  status: { phase: running ? "Running" : "Pending", containerStatuses: [{ name: "c", state: running ? { running: {} } : { waiting: { reason: "ContainerCreating" } } }] },
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "leviath-pod-exec-"));
  const certs = await generateCertificates(dir);
  server = createServer({ cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey), ca: readFileSync(certs.caCert), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    if (req.method === "GET" && req.url === "/api/v1/namespaces/ns/pods/p") {
      res.setHeader("content-type", "application/json");
      return void res.end(JSON.stringify(runningPod(behaviour.podRunning)));
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ kind: "Status", status: "Failure", reason: "NotFound", message: `${req.url} not found` }));
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => behaviour.protocols.find((p) => offered.has(p)) ?? false });
  server.on("upgrade", (req: IncomingMessage, socket, head: Buffer) => {
    const refuse = behaviour.refuse;
    if (refuse) return void socket.end(`HTTP/1.1 ${refuse.code} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(refuse.body)}\r\nconnection: close\r\n\r\n${refuse.body}`);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const tls = req.socket as TLSSocket;
      const received: Buffer[] = [];
      const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
      ws.on("message", (data) => void received.push(data));
      seen.push({ url: req.url ?? "", authorization: req.headers.authorization, servername: tls.servername, clientCn: tls.getPeerCertificate().subject?.CN, protocol: ws.protocol, received, closed });
      behaviour.onConnection?.(ws);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  kubeconfig = join(dir, "kubeconfig");
  writeFileSync(kubeconfig, [
    "apiVersion: v1", "kind: Config", "current-context: t",
    `clusters: [{ name: t, cluster: { server: "https://127.0.0.1:${port}", certificate-authority: ${certs.caCert}, tls-server-name: ${SERVER_NAME} } }]`,
    `users: [{ name: t, user: { token: ${TOKEN}, client-certificate: ${certs.adminCert}, client-key: ${certs.adminKey} } }]`,
    "contexts: [{ name: t, context: { cluster: t, user: t } }]", "",
  ].join("\n"));
}, 60_000);

afterAll(() => {
  server?.closeAllConnections();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  behaviour = { protocols: EXEC_SUBPROTOCOLS, podRunning: true };
  seen = [];
});

/** A writable that keeps what it is given, and says when it was ended. */
function collector(): { stream: Writable; text: () => string; ended: () => boolean } {
  const chunks: Buffer[] = [];
  let ended = false;
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk);
      done();
    },
    final(done) {
      ended = true;
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString("utf8"), ended: () => ended };
}

async function client(): Promise<ClusterClient> {
  return connectKube(kubeconfig, {});
}

const closedOf = (socket: { on(e: "close", l: () => void): unknown }) => new Promise<void>((resolve) => socket.on("close", resolve));

describe("pods/exec over the API server's WebSocket (no client-node)", () => {
  it("sends the command, streams and credentials, and relays stdout, stderr and the exit status", async () => {
    behaviour.onConnection = (ws) => {
      ws.send(buildChannelFrame(EXEC_CHANNEL.stdout, ""));
      ws.send(buildChannelFrame(EXEC_CHANNEL.stdout, "hello "));
      ws.send(buildChannelFrame(EXEC_CHANNEL.stderr, "warn\n"));
      ws.send(buildChannelFrame(EXEC_CHANNEL.stdout, "world\n"));
      ws.send(buildChannelFrame(EXEC_CHANNEL.status, JSON.stringify(EXIT_3)));
    };
    const out = collector();
    const err = collector();
    const statuses: ExecStatus[] = [];
    const exec = createPodExec(await client());
    const socket = await exec.exec("ns", "p", "c", ["sh", "-c", "echo 'a b' && exit 3"], out.stream, err.stream, null, false, (s) => void statuses.push(s));
    await closedOf(socket);
    expect(out.text()).toBe("hello world\n");
    expect(err.text()).toBe("warn\n");
    expect(out.ended() && err.ended()).toBe(true);
    expect(statuses).toEqual([EXIT_3]);
    const [s] = seen;
    const url = new URL(s!.url, "https://x");
    expect(url.pathname).toBe("/api/v1/namespaces/ns/pods/p/exec");
    expect(url.searchParams.getAll("command")).toEqual(["sh", "-c", "echo 'a b' && exit 3"]);
    expect(Object.fromEntries([...url.searchParams].filter(([k]) => k !== "command"))).toEqual({ container: "c", stdin: "false", stdout: "true", stderr: "true", tty: "false" });
    expect(s).toMatchObject({ authorization: `Bearer ${TOKEN}`, servername: SERVER_NAME, clientCn: ADMIN_USER, protocol: "v5.channel.k8s.io" });
  });

  it("v5: sends stdin on channel 0 and its end as [255, 0], and still reads the output after it", async () => {
    behaviour.onConnection = (ws) => ws.on("message", (data) => {
      if (data[0] === EXEC_CHANNEL.stdin) ws.send(buildChannelFrame(EXEC_CHANNEL.stdout, data.subarray(1)));
      if (data[0] === EXEC_CHANNEL.close && data[1] === EXEC_CHANNEL.stdin) ws.send(buildChannelFrame(EXEC_CHANNEL.status, JSON.stringify({ status: "Success" })));
    });
    const out = collector();
    const stdin = new PassThrough();
    let status: ExecStatus | undefined;
    const socket = await createPodExec(await client()).exec("ns", "p", "c", "cat", out.stream, null, stdin, false, (s) => void (status = s));
    stdin.write("line one\n");
    stdin.end(Buffer.from("line two\n"));
    await closedOf(socket);
    expect(out.text()).toBe("line one\nline two\n");
    expect(status).toEqual({ status: "Success" });
    expect(seen[0]!.received.map((b) => [...b])).toEqual([[0, ...Buffer.from("line one\n")], [0, ...Buffer.from("line two\n")], [255, 0]]);
    expect(new URL(seen[0]!.url, "https://x").searchParams.get("stdin")).toBe("true");
  });

  it("v4: the end of stdin closes the connection (v4 has no stream close)", async () => {
    behaviour.protocols = ["v4.channel.k8s.io"];
    const stdin = new PassThrough();
    let status: ExecStatus | undefined;
    const socket = await createPodExec(await client()).exec("ns", "p", "c", "cat", collector().stream, null, stdin, false, (s) => void (status = s));
    stdin.end("x");
    await Promise.all([closedOf(socket), seen[0]!.closed]);
    expect(seen[0]!.protocol).toBe("v4.channel.k8s.io");
    expect(seen[0]!.received.map((b) => [...b])).toEqual([[0, ...Buffer.from("x")]]);
    expect(status).toBeUndefined();
  });

  it("a refused upgrade fails with the server's own message", async () => {
    behaviour.refuse = { code: 403, body: JSON.stringify({ kind: "Status", status: "Failure", reason: "Forbidden", message: 'pods "p" is forbidden: cannot create resource "pods/exec"' }) };
    await expect(createPodExec(await client()).exec("ns", "p", "c", "id", collector().stream, null, null, false)).rejects.toThrow('Unexpected server response: 403: pods "p" is forbidden: cannot create resource "pods/exec"');
  });

  it("ends the exec without a status on a channel the protocol never sends, and never on a status that is not one", async () => {
    behaviour.onConnection = (ws) => ws.send(buildChannelFrame(7, "?"));
    let status: ExecStatus | undefined;
    const socket = await createPodExec(await client()).exec("ns", "p", "c", "id", collector().stream, null, null, false, (s) => void (status = s));
    await closedOf(socket);
    expect(status).toBeUndefined();

    behaviour.onConnection = (ws) => ws.send(buildChannelFrame(EXEC_CHANNEL.status, "[]"));
    const again = await createPodExec(await client()).exec("ns", "p", "c", "id", collector().stream, null, null, false, (s) => void (status = s));
    await closedOf(again);
    expect(status).toMatchObject({ status: "Failure" });
  });

  it("waits for the container first: no upgrade is made while it is not running", async () => {
    behaviour.podRunning = false;
    await expect(createPodExec(await client(), 1).exec("ns", "p", "c", "id", collector().stream, null, null, false)).rejects.toThrow("container 'c' of pod 'ns/p' is not running after 0 s (waiting: ContainerCreating)");
    expect(seen).toEqual([]);
  });

  it("keeps client-node's Exec for a library client (credentials that need its plugins), loaded on first use", async () => {
    behaviour.onConnection = (ws) => {
      ws.send(buildChannelFrame(EXEC_CHANNEL.stdout, "from the library\n"));
      ws.send(buildChannelFrame(EXEC_CHANNEL.status, JSON.stringify({ status: "Success" })));
    };
    const out = collector();
    let status: ExecStatus | undefined;
    const socket = await createPodExec(createKubeClient(loadKubeConfig(kubeconfig))).exec("ns", "p", "c", "id", out.stream, null, null, false, (s) => void (status = s));
    await closedOf(socket);
    expect(out.text()).toBe("from the library\n");
    expect(status).toEqual({ status: "Success" });
    expect(seen[0]).toMatchObject({ authorization: `Bearer ${TOKEN}`, clientCn: ADMIN_USER });
  });
});
