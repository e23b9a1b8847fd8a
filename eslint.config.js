// Lint: typescript-eslint's recommended rules plus the dependency-direction and purity rules of STYLE.md.
import { readdirSync } from "node:fs";
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** The folders of src/ that do no I/O; a pure folder imports only pure folders. */
const PURE_FOLDERS = ["api", "policy", "sandbox"];
const PURE = PURE_FOLDERS.map((folder) => `src/${folder}/**/*.ts`);
/**
 * Everything else at the top of src/ (read from the tree, so a new folder is impure until it is listed above): a
 * pure folder may import none of it.
 */
const IMPURE_IMPORTS = readdirSync(new URL("./src/", import.meta.url), { withFileTypes: true })
  .filter((e) => (e.isDirectory() && !PURE_FOLDERS.includes(e.name)) || (e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts")))
  .map((e) => (e.isDirectory() ? `**/${e.name}/**` : `**/${e.name}`));

/** Imports a folder may not make, as no-restricted-imports patterns. */
const forbid = (groups, message) => ({ group: groups, message });

const IO_MODULES = ["node:*", "fs", "fs/*", "path", "child_process", "net", "http", "https", "os", "process"];
const IO_PACKAGES = ["@kubernetes/client-node", "fastify", "pino", "prom-client"];

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "coverage/", "charts/", "deploy/", "crds/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly", setTimeout: "readonly", clearTimeout: "readonly", setInterval: "readonly", clearInterval: "readonly", Buffer: "readonly", AbortController: "readonly", AbortSignal: "readonly", TextEncoder: "readonly", TextDecoder: "readonly", structuredClone: "readonly", queueMicrotask: "readonly", fetch: "readonly", performance: "readonly", setImmediate: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      // STYLE.md rule 12: files under ~300 lines (blank lines and comments not counted).
      "max-lines": ["error", { max: 300, skipBlankLines: true, skipComments: true }],
      complexity: ["error", 26],
    },
  },
  {
    // STYLE.md rule 12, where it binds: functions a reader can hold in their head (~80 lines, four parameters, an
    // options object beyond), complexity 15, every case of a union handled, no promise left floating. Product code
    // only: tests (`**/*.test.ts`, test/) and benches (bench/) are long scripted scenarios and keep the looser
    // bounds above. The last two rules need type information, hence the project service for these files.
    files: ["src/**/*.ts"],
    ignores: ["**/*.test.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
      "max-params": ["error", 4],
      complexity: ["error", 15],
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      "@typescript-eslint/no-floating-promises": "error",
    },
  },
  {
    // Pure folders: no I/O, no ambient clock, randomness or environment.
    files: PURE,
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        patterns: [
          forbid(IO_MODULES, "pure modules do no I/O: take what you need as an argument (STYLE.md)"),
          forbid(IO_PACKAGES, "pure modules never import kube, fastify, logging or metrics (STYLE.md)"),
          forbid(IMPURE_IMPORTS, "dependency direction: a pure folder imports only pure folders (api <- policy, sandbox <- the rest)"),
        ],
      }],
      "no-restricted-globals": ["error", { name: "process", message: "pure modules take settings as arguments" }, { name: "fetch", message: "pure modules do no I/O" }],
      "no-restricted-properties": ["error",
        { object: "Date", property: "now", message: "inject the clock" },
        { object: "Math", property: "random", message: "inject randomness" },
        { object: "process", property: "env", message: "only config/ reads the environment" },
      ],
      "no-restricted-syntax": ["error", { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "inject the clock" }, { selector: "NewExpression[callee.name='RegExp']", message: "never build a JS RegExp from a pattern: compile with RE2 in policy/" }],
    },
  },
  {
    // api/ imports nothing else from src/.
    files: ["src/api/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [
        forbid(IO_MODULES, "pure modules do no I/O (STYLE.md)"),
        forbid(IO_PACKAGES, "api/ is schemas and constants only"),
        forbid(["../*", "!./*"], "api/ imports nothing else from src/ (STYLE.md)"),
      ] }],
    },
  },
  {
    // Only kube/ imports the Kubernetes client at runtime; only policy/ imports re2.
    files: ["src/**/*.ts"],
    ignores: ["src/kube/**", "src/policy/**", "**/*.test.ts", ...PURE],
    rules: {
      "no-restricted-imports": ["error", { paths: [
        { name: "@kubernetes/client-node", message: "talk to the API server through src/kube/", allowTypeImports: true },
        { name: "re2", message: "regexes are compiled in src/policy/ only" },
      ] }],
    },
  },
);
