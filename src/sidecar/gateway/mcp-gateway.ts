// The sidecar as an MCP gateway: it connects to the admin's MCP servers (streamable HTTP by URL, stdio by a
// command it starts confined), lists each server's tools once per connection it adds, and offers them as
// `<server>__<tool>` (upstream's sanitised name, `_2`-style suffixes on collisions). What a server offers is
// fixed at that first listing: a server that later lists more tools, or renames one, never widens it. A reload
// (`update`) connects servers the new policy adds and disconnects those it drops; the tools of an added server
// are offered from the next stage on, so nothing widens what the current stage was given when it started, while
// a dropped server's tools go at once (narrowing is always allowed). Every read is capped (capped-*.ts).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpServer } from "../../api/leviath-policy.ts";
import type { Logger } from "../../log/logger.ts";
import { buildMcpToolName, MAX_TOOL_NAME_LENGTH, sanitizeToolName } from "../../policy/mcp-overrides.ts";
import type { GatewayResult, GatewayServerState, GatewayTool, ToolGateway } from "../core/tool-gateway.ts";
import { createCappedFetch } from "../../io/capped-fetch.ts";
import type { CappedStdioTransport, StdioProcess } from "./capped-stdio.ts";
import { buildVarLookup, expandAll, expandStdioEnv, type VarSource } from "./server-vars.ts";

/** Starts a stdio server's command (standalone: a local process confined as `shell`; in a cluster: in a sandbox pod). */
export type StdioLauncher = (server: McpServer, env: Readonly<Record<string, string>>) => StdioProcess | Promise<StdioProcess>;

/** What the gateway is built from. */
export interface GatewayOptions {
  readonly servers: readonly McpServer[];
  /** Where `${VAR}` values come from (server-vars.ts). */
  readonly vars: VarSource;
  /** Absent: stdio servers cannot be started here (they are reported, and their tools are not offered). */
  readonly launchStdio: StdioLauncher | undefined;
  readonly log: Logger;
  /** The run's current stage index: what a stage is offered is decided when it is first seen. */
  readonly stageIndex?: () => number;
  /** How long connecting and listing one server may take. */
  readonly connectTimeoutMs?: number;
}

/** One connection to a server, with what it failed at when it was dropped at a cap. */
interface Connection {
  readonly client: Client;
  capFailure(): string | undefined;
  /** Whether the server should now run elsewhere (a stdio server whose stage moved to another sandbox). */
  moved(): boolean;
}

/** A declared server as the gateway holds it: its definition, the reload that added it, its state. */
interface Declared {
  readonly server: McpServer;
  /** The same text means the same server: a changed definition is a new server. */
  readonly key: string;
  /** The `update` that added it (0: the run's start). */
  readonly epoch: number;
  connection: Promise<Connection> | undefined;
  state: GatewayServerState;
  removed: boolean;
}

type OfferedTool = GatewayTool & { readonly upstream: string; readonly declared: Declared };

function textOf(content: readonly { type: string; text?: string }[]): string {
  return content.map((c) => (c.type === "text" ? (c.text ?? "") : `[${c.type} content]`)).join("\n");
}

/** The admin's MCP servers of one run. */
export class McpGateway implements ToolGateway {
  readonly #o: GatewayOptions;
  readonly #servers = new Map<string, Declared>();
  readonly #tools = new Map<string, OfferedTool>();
  /** The connections that finished opening (the others are still starting their server). */
  readonly #opened = new WeakSet<Promise<Connection>>();
  /** Every prefix a server of this run ever had: a dropped server's names stay `[unavailable]`, never another tool. */
  readonly #prefixes = new Set<string>();
  /** The epoch each stage was first seen at: it is offered the tools of servers added up to then. */
  readonly #stageEpochs = new Map<number, number>();
  #epoch = 0;
  #ready: Promise<void> = Promise.resolve();

  /** A gateway over the declared servers (nothing is connected until `ready`). */
  constructor(opts: GatewayOptions) {
    this.#o = opts;
    this.#add(opts.servers);
  }

  #add(servers: readonly McpServer[]): void {
    const listed: Promise<void>[] = [];
    for (const server of servers) {
      const d: Declared = { server, key: JSON.stringify(server), epoch: this.#epoch, connection: undefined, state: { name: server.name, offered: false, tools: 0, message: "connecting" }, removed: false };
      this.#servers.set(server.name, d);
      this.#prefixes.add(`${sanitizeToolName(server.name)}__`);
      listed.push(this.#list(d));
    }
    const before = this.#ready;
    this.#ready = Promise.all([before, ...listed]).then(() => undefined);
  }

  /** Resolves once every server declared so far was connected to (or failed to be) and its tools listed. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /**
   * The servers of a reloaded policy: new or changed ones are connected and listed, dropped or changed ones
   * disconnected (a stdio server is killed) and their tools withdrawn at once.
   */
  update(servers: readonly McpServer[]): { added: string[]; removed: string[] } {
    const next = new Map(servers.map((s) => [s.name, JSON.stringify(s)]));
    const removed = [...this.#servers.values()].filter((d) => next.get(d.server.name) !== d.key);
    for (const d of removed) this.#drop(d);
    this.#epoch++;
    const added = servers.filter((s) => !this.#servers.has(s.name));
    this.#add(added);
    if (added.length + removed.length > 0) this.#o.log.info({ added: added.map((s) => s.name), removed: removed.map((d) => d.server.name) }, "MCP servers changed by a reload");
    return { added: added.map((s) => s.name), removed: removed.map((d) => d.server.name) };
  }

  #drop(d: Declared): void {
    d.removed = true;
    this.#servers.delete(d.server.name);
    for (const [name, t] of this.#tools) if (t.declared === d) this.#tools.delete(name);
    const conn = d.connection;
    d.connection = undefined;
    void conn?.then((c) => c.client.close()).catch(() => undefined);
  }

  /** The epoch the current stage was first seen at. */
  #stageEpoch(): number {
    const stage = this.#o.stageIndex?.() ?? 0;
    let e = this.#stageEpochs.get(stage);
    if (e === undefined) {
      e = this.#epoch;
      this.#stageEpochs.set(stage, e);
    }
    return e;
  }

  #offeredNow(t: OfferedTool): boolean {
    return !t.declared.removed && t.declared.epoch <= this.#stageEpoch();
  }

  /** The tools offered to the current stage. */
  tools(): readonly GatewayTool[] {
    return [...this.#tools.values()].filter((t) => this.#offeredNow(t));
  }

  /** The offered tool of this name, if the current stage is offered it. */
  find(name: string): GatewayTool | undefined {
    const t = this.#tools.get(name);
    return t !== undefined && this.#offeredNow(t) ? t : undefined;
  }

  /** Whether the name belongs to a server this run declared (now or before a reload dropped it). */
  claims(name: string): boolean {
    for (const p of this.#prefixes) if (name.startsWith(p)) return true;
    return false;
  }

  /** Each declared server: whether its tools are offered, how many, and why not. */
  servers(): readonly GatewayServerState[] {
    return [...this.#servers.values()].map((d) => d.state);
  }

  async #list(d: Declared): Promise<void> {
    const { server } = d;
    try {
      const conn = await this.#connect(d);
      const listed = await conn.client.listTools();
      if (d.removed) return;
      for (const tool of listed.tools) {
        let name = buildMcpToolName(server.name, tool.name);
        // Upstream's de-duplication: a sanitised name already taken gets `_2`, `_3`, ... (within 64 bytes).
        for (let n = 2; this.#tools.has(name); n++) name = `${buildMcpToolName(server.name, tool.name).slice(0, MAX_TOOL_NAME_LENGTH - String(n).length - 1)}_${n}`;
        this.#tools.set(name, { name, server: server.name, tool: { ...tool, name }, upstream: tool.name, declared: d });
      }
      d.state = { name: server.name, offered: true, tools: listed.tools.length };
      this.#o.log.info({ server: server.name, tools: listed.tools.length }, "MCP server connected");
    } catch (err) {
      // Its tools are not offered: a call to one is `[unavailable]`, never an unchecked pass-through.
      const message = (err as Error).message;
      d.state = { name: server.name, offered: false, tools: 0, message };
      this.#o.log.error({ server: server.name, err: message }, "MCP server could not be listed; its tools are not offered");
    }
  }

  #connect(d: Declared): Promise<Connection> {
    let conn = d.connection;
    if (conn === undefined) {
      const opening = this.#open(d.server);
      conn = opening;
      d.connection = conn;
      opening.then(() => this.#opened.add(opening), () => undefined);
      // A failed or dropped connection is opened again on the next call.
      conn.catch(() => {
        if (d.connection === conn) d.connection = undefined;
      });
    }
    return conn;
  }

  async #open(server: McpServer): Promise<Connection> {
    // Loaded with the first server, never at the sidecar's start (the SDK's message schemas with it): a Run with
    // no MCP server, and every Run until its sidecar listens, does without them.
    const [{ Client: ClientClass }, { StreamableHTTPClientTransport }, { CappedStdioTransport: StdioTransport }] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
      import("./capped-stdio.ts"),
    ]);
    let capFailure: string | undefined;
    const client = new ClientClass({ name: "leviath-sidecar", version: "0.1.0" });
    let transport: Transport;
    let stdio: CappedStdioTransport | undefined;
    if (server.url !== undefined) {
      const headers = expandAll(server.headers, buildVarLookup(server, this.#o.vars), "header");
      transport = new StreamableHTTPClientTransport(new URL(server.url), {
        // No redirects: a header from a Secret goes to the admin's URL only, never where a reply points.
        requestInit: { headers, redirect: "error" },
        fetch: createCappedFetch({
          onCap: (m) => {
            capFailure = m;
            // The call waiting on this stream fails now, not at its timeout.
            queueMicrotask(() => void client.close());
          },
        }),
        // A dropped stream is not resumed: the call it carried has failed.
        reconnectionOptions: { maxReconnectionDelay: 1000, initialReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
      });
    } else {
      if (this.#o.launchStdio === undefined) throw new Error(`mcp server '${server.name}': stdio servers cannot be started by this sidecar`);
      stdio = new StdioTransport(await this.#o.launchStdio(server, expandStdioEnv(server, this.#o.vars)));
      transport = stdio;
    }
    const d = () => this.#servers.get(server.name);
    client.onclose = () => {
      const declared = d();
      if (declared !== undefined && declared.server === server) declared.connection = undefined;
    };
    await client.connect(transport, { timeout: this.#o.connectTimeoutMs ?? 30_000 });
    return { client, capFailure: () => stdio?.capFailure ?? capFailure, moved: () => stdio?.moved() ?? false };
  }

  /** The server's connection, restarted first where its stage moved it (the old server ends with its connection). */
  async #current(d: Declared): Promise<Connection> {
    const conn = await this.#connect(d);
    if (!conn.moved()) return conn;
    if (d.connection !== undefined) d.connection = undefined;
    await conn.client.close().catch(() => undefined);
    return this.#connect(d);
  }

  /** Calls one offered tool; a failure (a cap, a dropped server) is an error result naming it. */
  async call(name: string, args: Record<string, unknown>): Promise<GatewayResult> {
    const t = this.find(name) as OfferedTool | undefined;
    if (t === undefined) return { text: `[error] Tool '${name}' is not offered by any MCP server`, isError: true };
    return this.#call(t, args, undefined);
  }

  #upstream(server: string, tool: string): OfferedTool | undefined {
    for (const t of this.#tools.values()) if (t.server === server && t.upstream === tool && !t.declared.removed) return t;
    return undefined;
  }

  /** Whether the server is connected and listed the tool under this upstream name. */
  lists(server: string, tool: string): boolean {
    return this.#upstream(server, tool) !== undefined;
  }

  /** Calls a server's tool by its upstream name (web_search's backend) within `timeoutMs`. */
  async callUpstream(server: string, tool: string, args: Record<string, unknown>, timeoutMs: number): Promise<GatewayResult> {
    const t = this.#upstream(server, tool);
    if (t === undefined) return { text: `[error] MCP server '${server}' lists no tool '${tool}'`, isError: true };
    return this.#call(t, args, timeoutMs);
  }

  async #call(t: OfferedTool, args: Record<string, unknown>, timeoutMs: number | undefined): Promise<GatewayResult> {
    const d = t.declared;
    let conn: Connection | undefined;
    try {
      conn = await this.#current(d);
      const r = await conn.client.callTool({ name: t.upstream, arguments: args }, undefined, timeoutMs === undefined ? undefined : { timeout: timeoutMs });
      const content = Array.isArray(r.content) ? (r.content as { type: string; text?: string }[]) : [];
      return { text: textOf(content), isError: r.isError === true };
    } catch (err) {
      const capped = conn?.capFailure();
      if (capped !== undefined) {
        d.connection = undefined;
        await conn?.client.close().catch(() => undefined);
      }
      return { text: `[error] ${capped ?? `MCP server '${d.server.name}' failed: ${(err as Error).message}`}`, isError: true };
    }
  }

  /** Disconnects every server (stdio servers are killed). */
  async close(): Promise<void> {
    const open = [...this.#servers.values()].map((d) => d.connection).filter((c) => c !== undefined);
    for (const d of this.#servers.values()) d.connection = undefined;
    // A connection still being opened (its sandbox container not running yet) is closed once it is up, without
    // holding the sidecar's stop (which flushes the audit after this) for the length of that wait.
    for (const c of open) if (!this.#opened.has(c)) void c.then((x) => x.client.close()).catch(() => undefined);
    await Promise.all(open.filter((c) => this.#opened.has(c)).map((c) => c.then((x) => x.client.close()).catch(() => undefined)));
  }
}
