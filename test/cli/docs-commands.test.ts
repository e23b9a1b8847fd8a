// Every command a user copies from the operator's docs (quickstart, operations, metrics, kubectl-leviath) is run by a
// test, or marked next to it with why not and which test runs the same steps (issue 44). A command block is a fenced
// block in a shell language or any block with a `$ ` line (a transcript). It is run when COVERED lists it: the test
// named there runs that doc's unmarked blocks, and the list is checked against the docs both ways. It is marked when
// the line before it is `<!-- not run by the tests...: why; <the tests that run the same steps> -->`, naming at
// least one test file that exists. A new block that is neither fails here, by its file and first line.
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { repo } from "./run-cli.ts";

const DOCS = ["docs/quickstart.md", "docs/operations.md", "docs/metrics.md", "docs/kubectl-leviath.md"] as const;
const SHELL = new Set(["sh", "bash", "shell", "console"]);
const MARK = /<!-- (not run by the tests[^>]*)-->\s*$/;
/** test/integration/chart/docs.test.ts runs these docs' unmarked `sh` blocks, in order, against a real API server. */
const DOCS_TEST = "test/integration/chart/docs.test.ts";

const MODEL_SECRET = "kubectl create secret generic model-provider -n leviath-sandbox --from-literal=ANTHROPIC_API_KEY=sk-ant-replace-me --dry-run=client -o yaml | kubectl label --local -f - leviath.dev/credential=true -o yaml | kubectl apply -f -";

/** The blocks run as they are written, by their doc and first line, and the test that runs them. */
const COVERED: readonly { doc: (typeof DOCS)[number]; first: string; by: string }[] = [
  { doc: "docs/quickstart.md", first: "kubectl create namespace leviath-system", by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: "bin/leviath import test/fixtures/config/config.toml test/fixtures/config/policy.toml --namespace leviath-sandbox", by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: MODEL_SECRET, by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: "export PATH=\"$PWD/bin:$PATH\"", by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: "kubectl create secret generic openai-provider -n leviath-sandbox --from-literal=OPENAI_API_KEY=sk-replace-me --from-literal=OPENAI_BASE_URL=https://api.openai.com/v1 --dry-run=client -o yaml | kubectl label --local -f - leviath.dev/credential=true -o yaml | kubectl apply -f -", by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: "helm uninstall leviath-operator --namespace leviath-system", by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: "kubectl apply --server-side -f deploy/crds.yaml", by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: MODEL_SECRET, by: DOCS_TEST },
  { doc: "docs/quickstart.md", first: "kubectl delete -f examples/ --ignore-not-found", by: DOCS_TEST },
  { doc: "docs/operations.md", first: "kubectl apply --server-side -f charts/leviath-operator/crds/", by: DOCS_TEST },
  { doc: "docs/operations.md", first: "kubectl get leviathpolicy cluster -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{\"\\n\"}{end}'", by: DOCS_TEST },
  { doc: "docs/metrics.md", first: "helm upgrade leviath-operator charts/leviath-operator -n leviath-system --reuse-values --set metrics.serviceMonitor.enabled=true", by: DOCS_TEST },
  { doc: "docs/kubectl-leviath.md", first: "export PATH=\"$PWD/bin:$PATH\"     # in a checkout; or install the package, which puts both executables on PATH", by: DOCS_TEST },
];

type Block = { doc: string; line: number; lang: string; first: string; mark?: string };

/** The command blocks of one Markdown text: shell-language blocks and transcripts, with the marker before each. */
export function commandBlocks(doc: string, text: string): Block[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => SHELL.has(m[1]!) || /^\$ /m.test(m[2]!))
    .map((m) => ({
      doc, lang: m[1]!, line: text.slice(0, m.index).split("\n").length, first: m[2]!.split("\n")[0]!,
      mark: MARK.exec(text.slice(0, m.index))?.[1],
    }));
}

/** The test files a marker names (`test/....test.ts`). */
const namedTests = (mark: string): string[] => [...mark.matchAll(/test\/[\w./-]+\.test\.ts/g)].map((m) => m[0]);

const blocks = DOCS.flatMap((doc) => commandBlocks(doc, readFileSync(repo(doc), "utf8")));
const where = (b: Block) => `${b.doc}:${b.line} (${b.first})`;

describe("every command in the quickstart, operations, metrics and kubectl-leviath docs", () => {
  it("finds the docs' command blocks", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(20);
    for (const doc of DOCS) expect(blocks.some((b) => b.doc === doc), doc).toBe(true);
  });

  it("is run by a test or marked with why and the test that runs the same steps", () => {
    const covered = (b: Block) => COVERED.some((c) => c.doc === b.doc && c.first === b.first);
    expect(blocks.filter((b) => !b.mark && !covered(b)).map(where)).toEqual([]);
    expect(blocks.filter((b) => b.mark && covered(b)).map(where)).toEqual([]);
  });

  it("each marker says why and names test files that exist", () => {
    for (const b of blocks.filter((x) => x.mark)) {
      const tests = namedTests(b.mark!);
      expect(tests.length, `${where(b)}: the marker names no test file`).toBeGreaterThan(0);
      for (const t of tests) expect(existsSync(repo(t)), `${where(b)}: ${t}`).toBe(true);
      expect(b.mark!.replace(/test\/[\w./-]+\.test\.ts/g, "").length, `${where(b)}: the marker gives no reason`).toBeGreaterThan(40);
    }
  });

  it("lists only blocks the docs have, each run by a test that reads that doc", () => {
    for (const c of COVERED) {
      expect(blocks.filter((b) => b.doc === c.doc && b.first === c.first).length, `${c.doc}: ${c.first}`).toBeGreaterThan(0);
      expect(readFileSync(repo(c.by), "utf8"), `${c.by} names ${c.doc}`).toContain(`"${c.doc}"`);
    }
  });

  it("tells a block from a marked one", () => {
    const text = "a\n\n<!-- not run by the tests: why; test/e2e/demo.test.ts does -->\n```sh\nls\n```\n\n```text\n$ kubectl get runs\nRUN\n```\n\n```text\nRUN\n```\n";
    expect(commandBlocks("x.md", text)).toEqual([
      { doc: "x.md", lang: "sh", line: 4, first: "ls", mark: "not run by the tests: why; test/e2e/demo.test.ts does " },
      { doc: "x.md", lang: "text", line: 8, first: "$ kubectl get runs", mark: undefined },
    ]);
  });
});
