// A scripted agent runtime for the e2e suite: no model, a fixed list of tool calls sent to the sidecar at
// LEVIATH_SIDECAR_URL, each response printed as one JSON line on stdout for the test to read from the pod
// log. It covers a shell call in each stage's sandbox pod, a granted and a refused read, a private read
// followed by an outbound call that the taint gate asks about (answered by an Approval object), and
// submit_output. It then sleeps, so the engine pod stays Running while the test inspects the Run.
import { readFileSync } from "node:fs";

const base = process.env.LEVIATH_SIDECAR_URL ?? "http://127.0.0.1:7777";
// The sidecar's per-start secret: written before it listens, read once it is healthy.
const tokenFile = process.env.LEVIATH_SIDECAR_TOKEN_FILE;
let token;
const grantedPath = process.env.E2E_GRANTED_PATH ?? "/data/team-notes/notes.md";

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

async function waitForSidecar() {
  for (let i = 0; i < 600; i++) {
    try {
      const r = await request("GET", "/v1/healthz");
      if (r.status === 200) return r;
    } catch { /* not listening yet */ }
    await new Promise((resolve) => setTimeout(resolve, 500));
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
  return last;
}

emit("healthz", ...Object.values(await waitForSidecar()));
if (tokenFile !== undefined) token = readFileSync(tokenFile, "utf8").trim();
const stage0 = process.env.E2E_STAGE0 ?? "survey";
const stage1 = process.env.E2E_STAGE1 ?? "digest";
emit("stage0", ...Object.values(await request("POST", "/v1/stage", { stage: stage0 })));
await call("shell-stage0", "sh-0", "shell", { command: "hostname; id -u; grep NoNewPrivs /proc/self/status" });
await call("read-granted", "rd-1", "read_file", { path: grantedPath });
await call("read-refused", "rd-2", "read_file", { path: "/etc/shadow" });
emit("stage1", ...Object.values(await request("POST", "/v1/stage", { stage: stage1 })));
await call("shell-outbound", "sh-1", "shell", { command: "hostname; echo outbound" });
const out = await call("submit-output", "out-1", "submit_output", { output: "# digest\nall read\n" });
if (out.body?.decision === "run") {
  emit("submit-output:result", ...Object.values(await request("POST", "/v1/tool-calls/out-1/result", {})));
}
emit("state", ...Object.values(await request("GET", "/v1/status")));
emit("done", 0, {});
// Stay up: the Run stays Running while the test reads its status, audit and metrics.
setInterval(() => {}, 1 << 30);
