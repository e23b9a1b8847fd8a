// The reference row of the sidecar suite: what loopback HTTP costs on this machine before any decision. A fastify
// server (the sidecar's framework, with its defaults) and one POST route that parses the JSON body and answers a
// small JSON object, run as its own process and pinned like the sidecar. The sidecar's figures minus these are ours.
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.post("/v1/tool-calls", async (req) => ({ id: (req.body as { id?: unknown }).id, decision: "run" }));
const address = await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`listening on ${address}\n`);
process.once("SIGTERM", () => void app.close().then(() => process.exit(0)));
