// A small HTTP load generator for loopback: an open loop at a fixed rate (requests are sent on schedule
// whatever the answers do, so a slow server cannot slow the load down) and a closed loop of N workers.
import { Agent, request } from "node:http";

/** One request to send: a path and a JSON body built per request (ids must be unique). */
export interface LoadRequest {
  readonly path: string;
  readonly body: (i: number) => string;
}

/** What a run measured. */
export interface LoadResult {
  /** Send to end of response, nanoseconds. */
  readonly latenciesNs: Float64Array;
  /** Intended send time to end of response (includes the generator's own scheduling delay). */
  readonly fromScheduleNs: Float64Array;
  readonly sent: number;
  readonly failed: number;
  readonly seconds: number;
}

function send(agent: Agent, url: URL, req: LoadRequest, i: number): Promise<boolean> {
  const body = req.body(i);
  return new Promise((resolve) => {
    const r = request({ agent, host: url.hostname, port: url.port, path: req.path, method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode !== undefined && res.statusCode < 300));
    });
    // Loopback with Nagle on waits for a delayed ACK (40 ms on Linux) whenever a request spans two writes.
    r.on("socket", (socket) => socket.setNoDelay(true));
    r.on("error", () => resolve(false));
    r.end(body);
  });
}

/** Sends `rate` requests per second for `seconds`, on schedule, and waits for every answer. */
export async function runFixedRate(base: string, req: LoadRequest, rate: number, seconds: number): Promise<LoadResult> {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const total = Math.round(rate * seconds);
  const latencies = new Float64Array(total);
  const fromSchedule = new Float64Array(total);
  let failed = 0;
  let next = 0;
  const start = process.hrtime.bigint();
  const pending: Promise<void>[] = [];
  await new Promise<void>((done) => {
    const tick = () => {
      const now = process.hrtime.bigint();
      const elapsedNs = Number(now - start);
      while (next < total && (next * 1e9) / rate <= elapsedNs) {
        const i = next++;
        const scheduled = start + BigInt(Math.round((i * 1e9) / rate));
        const sentAt = process.hrtime.bigint();
        pending.push(send(agent, url, req, i).then((ok) => {
          const end = process.hrtime.bigint();
          latencies[i] = Number(end - sentAt);
          fromSchedule[i] = Number(end - scheduled);
          if (!ok) failed++;
        }));
      }
      if (next >= total) done();
      // Sleep until the next send is due rather than spin: the generator must not take the sidecar's CPU.
      else setTimeout(tick, Math.max(0, Math.floor(((next * 1e9) / rate - Number(process.hrtime.bigint() - start)) / 1e6)));
    };
    tick();
  });
  await Promise.all(pending);
  const secondsTaken = Number(process.hrtime.bigint() - start) / 1e9;
  agent.destroy();
  return { latenciesNs: latencies, fromScheduleNs: fromSchedule, sent: total, failed, seconds: secondsTaken };
}

/** `workers` loops each sending the next request as soon as the previous one is answered, for `seconds`. */
export async function runClosedLoop(base: string, req: LoadRequest, workers: number, seconds: number): Promise<LoadResult> {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: workers });
  const latencies: number[] = [];
  let failed = 0;
  let counter = 0;
  const start = process.hrtime.bigint();
  const endAt = start + BigInt(Math.round(seconds * 1e9));
  const worker = async () => {
    while (process.hrtime.bigint() < endAt) {
      const t0 = process.hrtime.bigint();
      const ok = await send(agent, url, req, counter++);
      latencies.push(Number(process.hrtime.bigint() - t0));
      if (!ok) failed++;
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  agent.destroy();
  const all = Float64Array.from(latencies);
  return { latenciesNs: all, fromScheduleNs: all, sent: latencies.length, failed, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}
