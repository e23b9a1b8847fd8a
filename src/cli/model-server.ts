// `leviath model-server`: the stand-in model as a command, for trying an Agent or a client (the reference runtime,
// Claude Code, Codex, the Agents SDK) without a provider key. It speaks Anthropic's Messages API and OpenAI's Chat
// Completions and Responses APIs, checks every request as the real service would (a 400 in the service's words), and
// answers from a YAML script or by echoing the client's last input.
import { readFileSync } from "node:fs";
import { createEchoSource, createScriptSource, parseModelScript } from "../model-server/script-file.ts";
import { startScriptedModelServer, type RecordedRequest } from "../model-server/scripted-model-server.ts";
import { parseCommandArgs, parseListenAddress } from "./args.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";

/** `leviath model-server --help`. */
export const MODEL_SERVER_HELP = `Usage: leviath model-server (--script FILE | --echo) [--listen HOST:PORT]

A stand-in model for trying Agents and agent clients without a provider key. It speaks Anthropic's Messages API
(POST /v1/messages) and OpenAI's Chat Completions (POST /v1/chat/completions) and Responses (POST /v1/responses),
buffered or streamed, and refuses a request the real service would refuse with that service's 400. Point a Run's
provider at it: runtime.providers.<name>.baseUrl http://HOST:PORT (Anthropic) or http://HOST:PORT/v1 (OpenAI);
any key is taken. It decides nothing: every tool call it asks for still goes through the sidecar.

Options:
      --script FILE       answer from a YAML script, one step per model request:
                            steps:
                              - calls: [{name: read_file, args: {path: notes.md}}]
                              - echo: true                 # the tool's result, as text
                              - text: "Done: notes.md summarised."
                            repeat: true                   # start over after the last step
                          a step has text, calls (name, args) or echo: true; without repeat, a request past the
                          last step is answered 500 ('the script has no step left for this request')
      --echo              answer every request with 'echo: ' and the client's last input (its message or the
                          last tool result); the model never calls a tool
      --listen HOST:PORT  where to listen (default 127.0.0.1:8787; 0.0.0.0:8787 in a pod)
  -h, --help              show this help

It prints where it listens, then one line per request (protocol, path, the step or the refusal) on stderr, and
runs until SIGINT or SIGTERM. Exit status: 0 stopped by a signal, 1 the script is invalid or the address taken,
2 usage error.
`;

const DEFAULT_LISTEN = "127.0.0.1:8787";

function describeRequest(r: RecordedRequest, n: number): string {
  return `model-server: ${r.protocol} ${r.path} ${r.refused === undefined ? `request ${n}` : `refused (400): ${r.refused}`}\n`;
}

/** Runs the stand-in until a signal stops it. */
export async function runModelServer(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, { script: { type: "string" }, echo: { type: "boolean" }, listen: { type: "string" } });
  if (values.help) {
    io.stdout(MODEL_SERVER_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if ((values.script === undefined) === (values.echo !== true)) throw new UsageError("give exactly one of --script FILE, --echo");
  const listen = parseListenAddress("--listen", values.listen ?? DEFAULT_LISTEN);
  let source;
  if (values.script !== undefined) {
    try {
      source = createScriptSource(parseModelScript(readFileSync(values.script, "utf8")));
    } catch (err) {
      io.stderr(`leviath model-server: ${values.script}: ${(err as Error).message}\n`);
      return EXIT.refused;
    }
  } else source = createEchoSource();
  let n = 0;
  let server;
  try {
    server = await startScriptedModelServer(source, listen.host, { port: listen.port, onRequest: (r) => io.stderr(describeRequest(r, r.refused === undefined ? ++n : n)) });
  } catch (err) {
    io.stderr(`leviath model-server: cannot listen on ${listen.host}:${listen.port}: ${(err as Error).message}\n`);
    return EXIT.refused;
  }
  io.stderr(`model-server: listening on ${server.url} (Anthropic base URL ${server.url}, OpenAI base URL ${server.url}/v1)\n`);
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
  });
  await server.close();
  return EXIT.ok;
}
