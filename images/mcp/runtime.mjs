// An agent runtime for the e2e suite that speaks only MCP to the sidecar (streamable HTTP at
// LEVIATH_SIDECAR_URL/mcp, the runtime token from LEVIATH_SIDECAR_TOKEN_FILE): no model and no /v1 call, a fixed
// list of tools/call requests, each answer printed as one JSON line on stdout for the test to read from the pod
// log. The Agent's stdio MCP server `everything` (the reference server-everything) runs in the sandbox pod; its
// tools are `everything__<tool>`. A call the taint gate asks about stays open until an Approval answers it (the
// sidecar sends progress meanwhile). Exits 0 when done.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const base = process.env.LEVIATH_SIDECAR_URL ?? "http://127.0.0.1:7777";
const tokenFile = process.env.LEVIATH_SIDECAR_TOKEN_FILE ?? "/run/leviath-runtime/runtime-token";
process.on("SIGTERM", () => process.exit(143));

function emit(step, body) {
  process.stdout.write(`${JSON.stringify({ step, body })}\n`);
}

// The token is written before the sidecar listens; until both are there, connecting fails and is tried again.
async function connect() {
  let last;
  for (let i = 0; i < 600; i++) {
    try {
      const token = readFileSync(tokenFile, "utf8").trim();
      const client = new Client({ name: "leviath-e2e-mcp-runtime", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    } catch (err) {
      last = err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  throw new Error(`the sidecar's MCP endpoint at ${base}/mcp never answered: ${last?.message}`);
}

const client = await connect();
emit("tools", (await client.listTools()).tools.map((t) => t.name));

async function call(step, name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000, resetTimeoutOnProgress: true, onprogress: () => undefined });
  const text = (r.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
  emit(step, { text, isError: r.isError === true, meta: r._meta ?? null });
}

// Public context: the gateway's tools are outbound, and allowed.
await call("env", "everything__get-env", {});
await call("echo", "everything__echo", { message: "hello from the sandbox" });
// A workspace file labels the context internal: from now on an outbound call is asked.
await call("read", "read_file", { path: "notes.md" });
await call("echo-after-read", "everything__echo", { message: "after the read" });
await call("submit", "submit_output", { output: "mcp-only run done\n" });
await client.close();
emit("done", {});
