// Writes crds/*.yaml, the strict-keys admission policy, docs/crds.md and values.schema.json's policy.spec from the
// zod schemas (src/api/crd-files.ts, src/api/values-schema.ts).
// Usage: node scripts/gen-crds.ts            write the files
//        node scripts/gen-crds.ts --check    exit 1 and name the files that differ, writing nothing
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildCrdFiles } from "../src/api/crd-files.ts";
import { buildPolicyKeysFile, buildValuesSchema, POLICY_KEYS_FILE, VALUES_SCHEMA_FILE } from "../src/api/values-schema.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const check = process.argv.includes("--check");

function current(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

const stale: string[] = [];
// The chart's values schema is hand-written except for `policy.spec`, which comes from the policy's zod schema.
const valuesSchema = { path: VALUES_SCHEMA_FILE, content: buildValuesSchema(current(join(root, VALUES_SCHEMA_FILE)) ?? "") };
for (const file of [...buildCrdFiles(), valuesSchema, { path: POLICY_KEYS_FILE, content: buildPolicyKeysFile() }]) {
  const path = join(root, file.path);
  if (current(path) === file.content) continue;
  stale.push(file.path);
  if (!check) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.content);
  }
}
if (check && stale.length > 0) {
  process.stderr.write(`gen-crds: out of date: ${stale.join(", ")}; run 'node scripts/gen-crds.ts'\n`);
  process.exitCode = 1;
} else if (!check) {
  process.stdout.write(stale.length ? `gen-crds: wrote ${stale.join(", ")}\n` : "gen-crds: up to date\n");
}
