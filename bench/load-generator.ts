// Load for the sidecar bench from autocannon (npm), run inside this process (pinned to its own core). Two modes: a
// fixed overall rate (autocannon's `overallRate`) and N connections flat out. Every request gets its own body, so
// every call id is new (`setupRequest`). Latencies are taken from autocannon's per-response event, which times
// each request from its write to the end of its response with process.hrtime: its own histogram keeps whole
// milliseconds only, too coarse for sub-millisecond calls.
import autocannon from "autocannon";

/** One request to send: a path and a JSON body built per request (ids must be unique). */
export interface LoadRequest {
  readonly path: string;
  readonly body: (i: number) => string;
  /** Sent with every request (the runtime token). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What a run measured. */
export interface LoadResult {
  /** Write to end of response of every answered request, nanoseconds. */
  readonly latenciesNs: Float64Array;
  /** Answered requests. */
  readonly answered: number;
  /** Answers with a status outside 2xx. */
  readonly non2xx: number;
  /** Connection errors and timeouts (no answer). */
  readonly errors: number;
  /** Answered requests per second while the load ran. */
  readonly perSecond: number;
}

/** Numbers every request body this process sends, so ids never repeat across runs against one sidecar. */
let sequence = 0;

interface Collector {
  latenciesMs: number[];
  non2xx: number;
}

/** One autocannon instance; resolves with its errors, answers and how long it ran. */
async function runInstance(base: string, req: LoadRequest, collector: Collector, opts: { connections: number; seconds: number; rate?: number }): Promise<{ errors: number; answered: number; seconds: number }> {
  const request: autocannon.Request = {
    method: "POST", path: req.path, headers: { "content-type": "application/json", ...req.headers },
    setupRequest: (r) => ({ ...r, body: req.body(sequence++) }),
  };
  let answered = 0;
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const options: autocannon.Options = {
      url: base, connections: opts.connections, duration: opts.seconds, requests: [request],
      // autocannon's correction assumes a 1 ms interval whatever the rate, and adds samples never sent.
      ...(opts.rate === undefined ? {} : { overallRate: opts.rate, ignoreCoordinatedOmission: true }),
    };
    autocannon(options, (err: unknown, res: autocannon.Result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(res)))
      .on("response", (_client, status, _bytes, ms) => {
        answered++;
        collector.latenciesMs.push(ms);
        if (status < 200 || status > 299) collector.non2xx++;
      });
  });
  return { errors: result.errors, answered, seconds: (performance.now() - started) / 1000 };
}

function resultOf(collector: Collector, runs: readonly { errors: number; answered: number; seconds: number }[]): LoadResult {
  return {
    latenciesNs: Float64Array.from(collector.latenciesMs, (ms) => ms * 1e6),
    answered: collector.latenciesMs.length,
    non2xx: collector.non2xx,
    errors: runs.reduce((n, r) => n + r.errors, 0),
    perSecond: runs.reduce((n, r) => n + r.answered / r.seconds, 0),
  };
}

/**
 * `rate` requests per second for `seconds`. autocannon refills each connection's budget for the second once a
 * second, and the connections of one instance all start together: one instance at 1,000/s would send its thousand
 * requests in one burst at the top of each second. So `groups` instances share the rate, each with
 * `connectionsPerGroup` connections, started 1/groups of a second apart: a burst is then rate/groups requests.
 */
export async function runAtRate(base: string, req: LoadRequest, rate: number, seconds: number, groups = 50, connectionsPerGroup = 2): Promise<LoadResult> {
  if (rate % groups !== 0) throw new Error(`rate ${rate} is not a multiple of ${groups} groups`);
  const collector: Collector = { latenciesMs: [], non2xx: 0 };
  const runs = await Promise.all(Array.from({ length: groups }, async (_, g) => {
    await new Promise((resolve) => setTimeout(resolve, (g * 1000) / groups));
    return runInstance(base, req, collector, { connections: connectionsPerGroup, seconds, rate: rate / groups });
  }));
  return resultOf(collector, runs);
}

/** `connections` connections, each sending its next request as soon as the last one is answered, for `seconds`. */
export async function runFlatOut(base: string, req: LoadRequest, connections: number, seconds: number): Promise<LoadResult> {
  const collector: Collector = { latenciesMs: [], non2xx: 0 };
  return resultOf(collector, [await runInstance(base, req, collector, { connections, seconds })]);
}
