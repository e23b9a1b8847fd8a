// Writes V8's code cache of the compiled CLI's modules into APP/.compile-cache, as the image's user, when the image is
// built (scripts/build-images runs it in the image's root fs, `chroot --userspec`); bin/leviath reads it at run time
// (read-only there). A cold sidecar spends most of its start compiling its modules (fastify and its schema compilers,
// prom-client, zod, ours); with the cache their top-level code and what it compiles eagerly is deserialized instead.
// Node keys the cache directory by its version, V8's flags and the user, and each entry by the file's path and checks
// its source: it must be written at the path, by the Node and as the user that run it, and a stale entry is ignored.
// Only imports (module top levels run, nothing listens or connects) and fastify's app made once without a listener.
// Usage: node scripts/compile-cache.mjs APP_DIR     (APP_DIR holds dist/; prints how many modules were cached)
import * as nodeModule from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

// What a sidecar (cluster, standalone, a pool pod's), the reference runtime, an adapter and bound-exec load, from dist/.
const ENTRIES = [
  "cli/dispatch.js", "cli/sidecar.js", "cli/sidecar-pool.js", "kube/connect.js", "kube/client.js", "kube/pod-exec.js",
  "sidecar/cluster/cluster-approvals.js", "sidecar/core/call-spans.js", "cli/bound-exec.js", "runtime/held-binding.js",
  "cli/agent.js", "cli/adapter.js",
];

const app = resolve(process.argv[2] ?? ".");
const dir = join(app, ".compile-cache");
const enabled = nodeModule.enableCompileCache?.(dir);
if (enabled?.status !== nodeModule.constants?.compileCacheStatus?.ENABLED) {
  process.stderr.write(`compile-cache: cannot write ${dir}: ${enabled?.message ?? "this Node has no compile cache"}\n`);
  process.exit(1);
}
let failed = 0;
for (const entry of ENTRIES) {
  await import(pathToFileURL(join(app, "dist", entry)).href).catch((err) => {
    failed++;
    process.stderr.write(`compile-cache: ${entry}: ${err.message}\n`);
  });
}
// The sidecar's routes are registered with fastify's lazily loaded parts (its schema compilers): made once here.
await import(pathToFileURL(join(app, "dist/sidecar/http/app.js")).href).then((m) => m.warmUpSidecarApp?.()).catch((err) => {
  failed++;
  process.stderr.write(`compile-cache: the sidecar app: ${err.message}\n`);
});
nodeModule.flushCompileCache();
process.stdout.write(`compile-cache: ${dir} written${failed > 0 ? `, ${failed} entries failed` : ""}\n`);
process.exit(failed > 0 ? 1 : 0);
