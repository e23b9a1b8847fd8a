#!/usr/bin/env node
// A minimal MCP client for trying the sidecar's gateway by hand, as a runtime talks to it: one request over
// streamable HTTP, the answer printed as JSON (the shape the MCP Inspector's CLI prints). docs/mcp.md's walkthrough
// runs it. Usage:
//   node scripts/mcp-call.ts URL [--header "Name: value"]... --method tools/list
//   node scripts/mcp-call.ts URL [--header "Name: value"]... --method tools/call --tool-name NAME [--tool-arg key=value]...
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { header: { type: "string", multiple: true }, method: { type: "string" }, "tool-name": { type: "string" }, "tool-arg": { type: "string", multiple: true } },
});
const [url] = positionals;
if (url === undefined || (values.method !== "tools/list" && values.method !== "tools/call") || (values.method === "tools/call" && !values["tool-name"])) {
  process.stderr.write("usage: node scripts/mcp-call.ts URL [--header 'Name: value']... --method tools/list | --method tools/call --tool-name NAME [--tool-arg key=value]...\n");
  process.exit(2);
}
const headers = Object.fromEntries((values.header ?? []).map((h) => [h.slice(0, h.indexOf(":")).trim(), h.slice(h.indexOf(":") + 1).trim()]));
const args = Object.fromEntries((values["tool-arg"] ?? []).map((a) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]));
const client = new Client({ name: "leviath-mcp-call", version: "1.0.0" });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const result = values.method === "tools/list" ? await client.listTools() : await client.callTool({ name: values["tool-name"]!, arguments: args });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} catch (err) {
  process.stderr.write(`mcp-call: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await client.close();
}
