// The sidecar as an MCP gateway: it connects to the admin's MCP servers (streamable HTTP by URL, stdio by a
// command it starts confined), lists their tools once and offers them as `<server>__<tool>` (upstream's
// sanitised name, `_2`-style suffixes on collisions). The listing is fixed at start: a server that later
// lists more tools, or renames one, cannot widen what the run was offered. Every read is capped (capped-*.ts).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpServer } from "../../api/policy.ts";
import type { Logger } from "../../log/logger.ts";
import { buildMcpToolName, MAX_TOOL_NAME_LENGTH, sanitizeToolName } from "../../policy/mcp-overrides.ts";
import type { GatewayResult, GatewayTool, ToolGateway } from "../core/tool-gateway.ts";
import { createCappedFetch } from "./capped-fetch.ts";
import { CappedStdioTransport, type StdioProcess } from "./capped-stdio.ts";

/** Starts a stdio server's command (standalone: a local process confined as `shell`; in a cluster: in a sandbox pod). */
export type StdioLauncher = (server: McpServer, env: Readonly<Record<string, string>>) => StdioProcess | Promise<StdioProcess>;

/** What the gateway is built from. */
export interface GatewayOptions {
  readonly servers: readonly McpServer[];
  /** Where `${VAR}` values come from. */
  readonly vars: Readonly<Record<string, string | undefined>>;
  /** Absent: stdio servers cannot be started here (they are reported, and their tools are not offered). */
  readonly launchStdio: StdioLauncher | undefined;
  readonly log: Logger;
  /** How long connecting and listing one server may take. */
  readonly connectTimeoutMs?: number;
}

/** Replaces `${VAR}` by the variable; a missing one is an error naming it (never an empty value). */
export function expandVars(value: string, vars: Readonly<Record<string, string | undefined>>, where: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = vars[name];
    if (v === undefined) throw new Error(`${where}: \${${name}} is not set`);
    return v;
  });
}

function expandAll(map: Readonly<Record<string, string>> | undefined, vars: GatewayOptions["vars"], where: string): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).map(([k, v]) => [k, expandVars(v, vars, `${where} '${k}'`)]));
}

/** One connection to a server, with what it failed at when it was dropped at a cap. */
interface Connection {
  readonly client: Client;
  capFailure(): string | undefined;
  /** Whether the server should now run elsewhere (a stdio server whose stage moved to another sandbox). */
  moved(): boolean;
}

function textOf(content: readonly { type: string; text?: string }[]): string {
  return content.map((c) => (c.type === "text" ? (c.text ?? "") : `[${c.type} content]`)).join("\n");
}

/** The admin's MCP servers of one run. */
export class McpGateway implements ToolGateway {
  readonly #o: GatewayOptions;
  readonly #tools = new Map<string, GatewayTool & { readonly upstream: string }>();
  readonly #connections = new Map<string, Promise<Connection>>();
  /** The connections that finished opening (the others are still starting their server). */
  readonly #opened = new WeakSet<Promise<Connection>>();
  readonly #prefixes: readonly string[];
  #ready: Promise<void> | undefined;

  /** A gateway over the declared servers (nothing is connected until `ready`). */
  constructor(opts: GatewayOptions) {
    this.#o = opts;
    this.#prefixes = opts.servers.map((s) => `${sanitizeToolName(s.name)}__`);
  }

  /** Connects to every server once and lists its tools. */
  ready(): Promise<void> {
    this.#ready ??= Promise.all(this.#o.servers.map((s) => this.#list(s))).then(() => undefined);
    return this.#ready;
  }

  /** The offered tools. */
  tools(): readonly GatewayTool[] {
    return [...this.#tools.values()];
  }

  /** The offered tool of this name. */
  find(name: string): GatewayTool | undefined {
    return this.#tools.get(name);
  }

  /** Whether the name belongs to a declared server. */
  claims(name: string): boolean {
    return this.#prefixes.some((p) => name.startsWith(p));
  }

  async #list(server: McpServer): Promise<void> {
    try {
      const conn = await this.#connect(server);
      const listed = await conn.client.listTools();
      for (const tool of listed.tools) {
        let name = buildMcpToolName(server.name, tool.name);
        // Upstream's de-duplication: a sanitised name already taken gets `_2`, `_3`, ... (within 64 bytes).
        for (let n = 2; this.#tools.has(name); n++) name = `${buildMcpToolName(server.name, tool.name).slice(0, MAX_TOOL_NAME_LENGTH - String(n).length - 1)}_${n}`;
        this.#tools.set(name, { name, server: server.name, tool: { ...tool, name }, upstream: tool.name });
      }
      this.#o.log.info({ server: server.name, tools: listed.tools.length }, "MCP server connected");
    } catch (err) {
      // Its tools are not offered: a call to one is `[unavailable]`, never an unchecked pass-through.
      this.#o.log.error({ server: server.name, err: (err as Error).message }, "MCP server could not be listed; its tools are not offered");
    }
  }

  #connect(server: McpServer): Promise<Connection> {
    let conn = this.#connections.get(server.name);
    if (conn === undefined) {
      const opening = this.#open(server);
      conn = opening;
      this.#connections.set(server.name, conn);
      opening.then(() => this.#opened.add(opening), () => undefined);
      // A failed or dropped connection is opened again on the next call.
      conn.catch(() => this.#connections.delete(server.name));
    }
    return conn;
  }

  async #open(server: McpServer): Promise<Connection> {
    const [{ Client: ClientClass }, { StreamableHTTPClientTransport }] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    ]);
    let capFailure: string | undefined;
    const client = new ClientClass({ name: "leviath-sidecar", version: "0.1.0" });
    let transport: Transport;
    let stdio: CappedStdioTransport | undefined;
    if (server.url !== undefined) {
      const headers = expandAll(server.headers, this.#o.vars, `mcp server '${server.name}' header`);
      transport = new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers },
        fetch: createCappedFetch((m) => {
          capFailure = m;
          // The call waiting on this stream fails now, not at its timeout.
          queueMicrotask(() => void client.close());
        }),
        // A dropped stream is not resumed: the call it carried has failed.
        reconnectionOptions: { maxReconnectionDelay: 1000, initialReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
      });
    } else {
      if (this.#o.launchStdio === undefined) throw new Error(`mcp server '${server.name}': stdio servers cannot be started by this sidecar`);
      stdio = new CappedStdioTransport(await this.#o.launchStdio(server, expandAll(server.env, this.#o.vars, `mcp server '${server.name}' env`)));
      transport = stdio;
    }
    const forget = () => this.#connections.delete(server.name);
    client.onclose = forget;
    await client.connect(transport, { timeout: this.#o.connectTimeoutMs ?? 30_000 });
    return { client, capFailure: () => stdio?.capFailure ?? capFailure, moved: () => stdio?.moved() ?? false };
  }

  /** The server's connection, restarted first where its stage moved it (the old server ends with its connection). */
  async #current(server: McpServer): Promise<Connection> {
    const conn = await this.#connect(server);
    if (!conn.moved()) return conn;
    this.#connections.delete(server.name);
    await conn.client.close().catch(() => undefined);
    return this.#connect(server);
  }

  /** Calls one offered tool; a failure (a cap, a dropped server) is an error result naming it. */
  async call(name: string, args: Record<string, unknown>): Promise<GatewayResult> {
    const t = this.#tools.get(name);
    if (t === undefined) return { text: `[error] Tool '${name}' is not offered by any MCP server`, isError: true };
    const server = this.#o.servers.find((s) => s.name === t.server)!;
    let conn: Connection | undefined;
    try {
      conn = await this.#current(server);
      const r = await conn.client.callTool({ name: t.upstream, arguments: args });
      const content = Array.isArray(r.content) ? (r.content as { type: string; text?: string }[]) : [];
      return { text: textOf(content), isError: r.isError === true };
    } catch (err) {
      const capped = conn?.capFailure();
      if (capped !== undefined) {
        this.#connections.delete(server.name);
        await conn?.client.close().catch(() => undefined);
      }
      return { text: `[error] ${capped ?? `MCP server '${server.name}' failed: ${(err as Error).message}`}`, isError: true };
    }
  }

  /** Disconnects every server (stdio servers are killed). */
  async close(): Promise<void> {
    const open = [...this.#connections.values()];
    this.#connections.clear();
    // A connection still being opened (its sandbox container not running yet) is closed once it is up, without
    // holding the sidecar's stop (which flushes the audit after this) for the length of that wait.
    for (const c of open) if (!this.#opened.has(c)) void c.then((x) => x.client.close()).catch(() => undefined);
    await Promise.all(open.filter((c) => this.#opened.has(c)).map((c) => c.then((x) => x.client.close()).catch(() => undefined)));
  }
}
