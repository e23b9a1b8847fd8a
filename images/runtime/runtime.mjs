// A scripted agent runtime for the e2e suite, written to the runtime contract (docs/runtime.md): no model, a
// fixed list of tool calls sent to the sidecar at LEVIATH_SIDECAR_URL, each response printed as one JSON line
// on stdout for the test to read from the pod log. It learns its task, stages and scenario from the file at
// LEVIATH_RUNTIME_CONFIG (the Run's `spec.runtime.e2e` picks the scenario), and it exits when it is done:
//   flow (default)  shell in each stage's sandbox pod, a granted and a refused read, a private read followed by
//                   an outbound call that the taint gate asks about (answered by an Approval object), the
//                   credential it was given (a hash, never the value), submit_output; exit 0
//   fail, exit      exit with `exitCode` at once (when not 0, saying why in the termination message)
//   (flow) holdTool a call of that tool before submit_output, which waits for a person (an Approval)
//   wait            a call that asks for a person nobody sends, waited on until the Run's deadline stops it
//   restart         a refused read and submit_output, then it waits for the sidecar's next start (a new runtime
//                   token: the test kills the sidecar), reads /v1/status from it, makes one more refused read; exit 0
//   first-call      one shell call (`true`, in the sandbox pod; with tool: list_dir, a listing of the workspace the
//                   sidecar answers itself), then exit 0; its line carries when the runtime
//                   started, when the sidecar answered its health check and when the call's answer arrived
//                   (epoch ms on the node's clock), for `npm run bench -- start`
//   integrity       an agent hijacked by a web page (issue 40): the task (`page`, `report`: two URLs it names)
//                   labelled as input, a web_fetch of the page, then what the page says to do: an http_post to the
//                   URL the page names (read from the fetched text, never from the config), then the task's own
//                   report; the page evicted from the context, the same report again; with `holdTool`, a call of
//                   that tool (asked: the Run stays in progress while a test looks at it); submit_output; exit 0
// The flow prints, before `done`, a `timing` line: when the runtime started and when its first tool
// call's answer arrived (epoch ms on the node's clock).
// Started with its warm pool pod (the pool's runtimeStart: with-pod), it is held on its binding first, as a
// third-party runtime would be (docs/runtime.md, "A runtime started with its pool pod"): it reads the pipe
// LEVIATH_BINDING_FD names to its end, one JSON document from `leviath bound-exec` ({run, env}), adds `env` to its
// environment, and only then reads runtime.json (written before the document). An empty or malformed document is
// no binding: it exits 1 having read nothing of any Run. It says `held` (with `startedAt`) before the wait, and its
// lines then say when it was bound (`boundAt`).
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { Socket } from "node:net";

const startedAt = Date.now();
let firstAnsweredAt;
const base = process.env.LEVIATH_SIDECAR_URL ?? "http://127.0.0.1:7777";
// The sidecar's per-start secret: written before it listens, read once it is healthy.
const tokenFile = process.env.LEVIATH_SIDECAR_TOKEN_FILE;
let token;

/** The held binding's document, read to the pipe's end (undefined: the pipe ended empty or failed). */
function readBinding(fd) {
  return new Promise((resolve) => {
    const pipe = new Socket({ fd, readable: true, writable: false });
    let text = "";
    pipe.setEncoding("utf8");
    pipe.on("data", (chunk) => (text += chunk));
    pipe.once("error", () => resolve(undefined));
    pipe.once("end", () => resolve(text));
  });
}

let boundAt;
let boundRun;
if (process.env.LEVIATH_BINDING_FD !== undefined) {
  // Said before the wait: what a test reads to know the runtime was up before its Run.
  process.stdout.write(`${JSON.stringify({ step: "held", status: 0, body: { startedAt, run: process.env.LEVIATH_RUN ?? null } })}\n`);
  // While it waits, its HTTP client is loaded and connected once (the unbound sidecar answers the health check
  // 503 not-bound, without a token and with nothing of any Run): the first request after the binding pays for neither.
  fetch(`${base}/v1/healthz`).then((r) => r.arrayBuffer()).catch(() => undefined);
  const text = await readBinding(Number(process.env.LEVIATH_BINDING_FD));
  let binding;
  try { binding = JSON.parse(text ?? ""); } catch { binding = undefined; }
  if (typeof binding?.run !== "string" || typeof binding.env !== "object" || binding.env === null) {
    process.stderr.write("runtime: no binding came through LEVIATH_BINDING_FD; exiting without a Run\n");
    process.exit(1);
  }
  Object.assign(process.env, binding.env);
  delete process.env.LEVIATH_BINDING_FD;
  boundAt = Date.now();
  boundRun = binding.run;
}
const config = JSON.parse(readFileSync(process.env.LEVIATH_RUNTIME_CONFIG ?? "/etc/leviath/runtime/runtime.json", "utf8"));
const e2e = config.run?.runtime?.e2e ?? {};
const stages = (config.agent?.stages ?? []).map((s) => s.name);

// The kubelet stops the engine pod with SIGTERM (a deadline, a cancellation): stop at once.
process.on("SIGTERM", () => process.exit(143));

function emit(step, status, body) {
  process.stdout.write(`${JSON.stringify({ step, status, body })}\n`);
}

async function request(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed;
  try { parsed = JSON.parse(text); } catch { parsed = text; }
  return { status: res.status, body: parsed };
}

// Asked every 25 ms (a refused loopback connection costs next to nothing), for up to 5 minutes: the sidecar's
// ready is seen within 25 ms of it, which the start bench reads as the sidecar's start.
async function waitForSidecar() {
  const until = Date.now() + 300_000;
  while (Date.now() < until) {
    try {
      const r = await request("GET", "/v1/healthz");
      if (r.status === 200) return r;
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`sidecar at ${base} never became healthy`);
}

// A call, then, while it is asked (202), the long-poll for its outcome (an Approval answers it).
async function call(step, id, tool, args) {
  const first = await request("POST", "/v1/tool-calls", { id, tool, args });
  emit(step, first.status, first.body);
  let last = first;
  while (last.status === 202 || last.body?.decision === "ask") {
    last = await request("GET", `/v1/tool-calls/${encodeURIComponent(id)}?wait=20`);
    if (last.body?.decision !== "ask") emit(`${step}:outcome`, last.status, last.body);
  }
  firstAnsweredAt ??= Date.now();
  return last;
}

const sha256 = (text) => createHash("sha256").update(text).digest("hex");
function readOrNull(path) {
  try { return readFileSync(path, "utf8"); } catch { return null; }
}

if (boundRun !== undefined) emit("binding", 0, { run: boundRun, env: process.env.LEVIATH_RUN, startedAt, boundAt });
emit("healthz", ...Object.values(await waitForSidecar()));
if (tokenFile !== undefined) token = readFileSync(tokenFile, "utf8").trim();
emit("config", 0, { task: config.run?.task, mode: config.run?.mode, stages, scenario: e2e.scenario ?? "flow" });

if (e2e.scenario === "fail" || e2e.scenario === "exit") {
  if (e2e.exitCode !== 0) writeFileSync("/dev/termination-log", `e2e: failing on purpose with exit code ${e2e.exitCode}`);
  emit("done", e2e.exitCode, {});
  process.exit(e2e.exitCode);
}

if (e2e.scenario === "first-call") {
  const healthyAt = Date.now();
  // `shell` by default (executed in the sandbox pod); `list_dir` of the workspace is answered by the sidecar alone.
  const r = e2e.tool === "list_dir" ? await call("first-call", "fc-1", "list_dir", { path: "." }) : await call("first-call", "fc-1", "shell", { command: "true" });
  emit("first-call:timing", r.status, { startedAt, boundAt, healthyAt, answeredAt: Date.now(), decision: r.body?.decision });
  emit("done", 0, {});
  process.exit(0);
}

if (e2e.scenario === "wait") {
  // Nobody answers this prompt: the call is pending until the Run's deadline stops the pod.
  await call("wait", "wait-1", e2e.tool ?? "shell", { command: "true" });
  emit("done", 1, { unexpected: "the prompt was answered" });
  process.exit(1);
}

if (e2e.scenario === "restart") {
  await call("read-refused", "rd-1", "read_file", { path: "/etc/shadow" });
  await call("submit-output", "out-1", "submit_output", { output: "# answer\nkept across a restart\n" });
  emit("waiting-for-restart", 0, {});
  // The sidecar writes a new token at each start, before it listens.
  while ((readOrNull(tokenFile) ?? "").trim() === token) await new Promise((resolve) => setTimeout(resolve, 500));
  emit("healthz-again", ...Object.values(await waitForSidecar()));
  token = readFileSync(tokenFile, "utf8").trim();
  emit("state", ...Object.values(await request("GET", "/v1/status")));
  await call("read-refused-again", "rd-2", "read_file", { path: "/etc/gshadow" });
  emit("done", 0, {});
  process.exit(0);
}

if (e2e.scenario === "integrity") {
  const task = config.run?.task ?? "";
  emit("task", ...Object.values(await request("POST", "/v1/context/entries", { entries: [{ region: "task", id: "task", source: "input", text: task }] })));
  const page = await call("fetch", "fetch-1", "web_fetch", { url: e2e.page });
  // What the model would take from the page: the address it names and the recipient it asks for.
  const text = String(page.body?.result ?? "");
  const url = /https?:\/\/[^\s"'<>()]+\/collect/.exec(text)?.[0];
  const recipient = /[\w.+-]+@[\w-]+(\.[\w-]+)+/.exec(text)?.[0];
  emit("injected", 0, { url: url ?? null, recipient: recipient ?? null });
  await call("post-injected", "post-1", "http_post", { url: url ?? "http://unread.invalid/collect", body: JSON.stringify({ to: recipient, passport: "X1234567" }) });
  const report = { url: e2e.report, body: "status: the travel policy is read" };
  await call("report-untrusted", "post-2", "http_post", report);
  // The runtime drops the page from the model's context: the context is trusted again, and the same call runs.
  emit("evict", ...Object.values(await request("POST", "/v1/context/evictions", { entries: [page.body?.entry ?? { region: "conversation", id: "fetch-1" }] })));
  await call("report-trusted", "post-3", "http_post", report);
  if (e2e.holdTool) await call("hold", "hold-1", e2e.holdTool, { path: "." });
  const out = await call("submit-output", "out-1", "submit_output", { output: "travel policy read; reported\n" });
  if (out.body?.decision === "run") emit("submit-output:result", ...Object.values(await request("POST", "/v1/tool-calls/out-1/result", {})));
  emit("done", 0, {});
  process.exit(0);
}

const grantedPath = e2e.grantedPath ?? "/data/team-notes/notes.md";
emit("credentials", 0, {
  env: process.env[e2e.credentialEnv ?? "E2E_MODEL_KEY"] === undefined ? null : sha256(process.env[e2e.credentialEnv ?? "E2E_MODEL_KEY"]),
  file: e2e.credentialFile ? (readOrNull(e2e.credentialFile) === null ? null : sha256(readOrNull(e2e.credentialFile))) : null,
});
emit("stage0", ...Object.values(await request("POST", "/v1/stage", { stage: stages[0] })));
await call("shell-stage0", "sh-0", "shell", { command: "hostname; id -u; grep NoNewPrivs /proc/self/status; env | grep -c E2E_MODEL_KEY; test -e /var/run/leviath && echo present || echo absent" });
await call("read-granted", "rd-1", "read_file", { path: grantedPath });
await call("read-refused", "rd-2", "read_file", { path: "/etc/shadow" });
emit("stage1", ...Object.values(await request("POST", "/v1/stage", { stage: stages[1] })));
await call("shell-outbound", "sh-1", "shell", { command: "hostname; echo outbound" });
// `holdTool`: a call the policy asks a person about, so the Run stays in progress (waiting for that person)
// while a test looks at it; it goes on once an Approval answers, or ends when the Run is stopped.
if (e2e.holdTool) await call("hold", "hold-1", e2e.holdTool, { to: "ops@example.com", body: "waiting for a person" });
const out = await call("submit-output", "out-1", "submit_output", { output: "# digest\nall read\n" });
if (out.body?.decision === "run") {
  emit("submit-output:result", ...Object.values(await request("POST", "/v1/tool-calls/out-1/result", {})));
}
emit("state", ...Object.values(await request("GET", "/v1/status")));
emit("timing", 0, { startedAt, boundAt, firstAnsweredAt });
emit("done", 0, {});
// Done: exit 0, and the engine pod, and with it the Run, completes.
