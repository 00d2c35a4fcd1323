// @ts-check
/**
 * The dependency direction of src/ (docs/ARCHITECTURE.md, "The rule"), as two ESLint rules:
 *
 * - `layers/direction`: every relative import of a src/ file is resolved to its layer; an edge the
 *   layer table does not allow is reported, naming both layers and the rule.
 * - `layers/no-cycles`: no module-level import cycle in src/ (type-only imports count: a cycle of
 *   types is still two modules that cannot be understood, moved or tested one without the other).
 *
 * Both read the layer table and the list of known exceptions from the rule options, which
 * eslint-rules/config.js supplies. No dependency beyond ESLint and TypeScript (already used).
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

/**
 * @typedef {{ name: string, pattern: string }} LayerDef
 * @typedef {{ layers: LayerDef[], allow: Record<string, string[]>, exceptions?: Record<string, string> }} LayerOptions
 */

/** `a/**` matches everything under a/, `a/*.ts` one level, anything else exactly. */
function globToRegExp(/** @type {string} */ glob) {
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      out += ".*";
      i++;
      if (glob[i + 1] === "/") i++;
    } else if (c === "*") out += "[^/]*";
    else out += c.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/** @param {LayerOptions} options */
function compile(options) {
  const layers = options.layers.map((l) => ({ name: l.name, re: globToRegExp(l.pattern) }));
  /** @type {Map<string, RegExp[]>} */
  const allow = new Map();
  for (const [from, targets] of Object.entries(options.allow)) {
    allow.set(
      from,
      targets.map((t) => globToRegExp(t)),
    );
  }
  return {
    /** @param {string} file repository-relative, forward slashes */
    layerOf(file) {
      return layers.find((l) => l.re.test(file))?.name;
    },
    /**
     * The allow list of a layer names layers, or (with a slash) file globs of another layer, so
     * that a layer can reach only part of another (a provider's routes use api's shared helpers).
     * @param {string} from @param {string} to @param {string} toFile
     */
    allowed(from, to, toFile) {
      if (from === to) return true;
      const targets = options.allow[from] ?? [];
      return targets.some((t, i) => {
        if (!t.includes("/")) return t === to;
        return (allow.get(from) ?? [])[i]?.test(toFile) ?? false;
      });
    },
    exceptions: options.exceptions ?? {},
  };
}

/** @param {string} file */
const slash = (file) => file.split(path.sep).join("/");

/**
 * The repository-relative path an import names, `.js` mapped to the `.ts` source, a folder to its
 * index; undefined for packages and node: modules.
 * @param {string} root @param {string} fromFile repository-relative @param {string} specifier
 */
function resolveImport(root, fromFile, specifier) {
  if (!specifier.startsWith(".")) return undefined;
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), specifier));
  const candidates = [
    joined.replace(/\.js$/, ".ts"),
    joined,
    `${joined}.ts`,
    `${joined.replace(/\.js$/, "")}/index.ts`,
    `${joined}/index.ts`,
  ];
  return (
    candidates.find(
      (c) => fs.existsSync(path.join(root, c)) && fs.statSync(path.join(root, c)).isFile(),
    ) ?? candidates[0]
  );
}

/**
 * Every module specifier of a file's source: static imports and re-exports (type-only ones
 * included), dynamic `import()` and `import("…")` types.
 * @param {string} text
 */
function specifiersOf(text) {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/**
 * Every import node of the file being linted, with its specifier.
 * @param {import("eslint").Rule.RuleContext} context
 * @param {(node: import("estree").Node, specifier: string) => void} visit
 */
function importVisitors(context, visit) {
  /** @param {any} node */
  const fromSource = (node) => {
    const source = node.source;
    if (source && source.type === "Literal" && typeof source.value === "string") {
      visit(source, source.value);
    }
  };
  return {
    ImportDeclaration: fromSource,
    ExportNamedDeclaration: fromSource,
    ExportAllDeclaration: fromSource,
    ImportExpression: fromSource,
    /** @param {any} node `import("…")` in a type position */
    TSImportType(node) {
      const arg = node.argument;
      const literal = arg?.type === "TSLiteralType" ? arg.literal : arg;
      if (literal?.type === "Literal" && typeof literal.value === "string")
        visit(node, literal.value);
    },
    /** @param {any} node `import x = require("…")` */
    TSExternalModuleReference(node) {
      if (node.expression?.type === "Literal" && typeof node.expression.value === "string") {
        visit(node, node.expression.value);
      }
    },
  };
}

/** @param {import("eslint").Rule.RuleContext} context */
function fileOf(context) {
  const root = context.cwd;
  return { root, file: slash(path.relative(root, context.physicalFilename)) };
}

/** @type {import("eslint").Rule.RuleModule} */
const direction = {
  meta: {
    type: "problem",
    docs: { description: "Imports in src/ follow the layer rule of docs/ARCHITECTURE.md" },
    schema: [{ type: "object", additionalProperties: true }],
    messages: {
      forbidden:
        "Layer rule (docs/ARCHITECTURE.md): {{fromLayer}} ({{from}}) may not import {{toLayer}} ({{to}}); {{fromLayer}} may import only {{allowed}}.",
      unknown: "Layer rule: {{file}} is in no layer; add its folder to eslint-rules/config.js.",
      staleException:
        "{{file}} no longer breaks the layer rule: remove it from the exceptions in eslint-rules/config.js.",
    },
  },
  create(context) {
    const options = /** @type {LayerOptions} */ (context.options[0]);
    const rules = compile(options);
    const { root, file } = fileOf(context);
    if (!file.startsWith("src/")) return {};
    const fromLayer = rules.layerOf(file);
    if (!fromLayer) {
      return {
        Program(node) {
          context.report({ node, messageId: "unknown", data: { file } });
        },
      };
    }
    const excepted = Object.hasOwn(rules.exceptions, file);
    let broken = false;
    return {
      ...importVisitors(context, (node, specifier) => {
        const target = resolveImport(root, file, specifier);
        if (!target) return;
        const toLayer = rules.layerOf(target);
        if (!toLayer) {
          if (target.startsWith("src/")) {
            context.report({ node, messageId: "unknown", data: { file: target } });
          }
          return;
        }
        if (rules.allowed(fromLayer, toLayer, target)) return;
        broken = true;
        if (excepted) return;
        context.report({
          node,
          messageId: "forbidden",
          data: {
            fromLayer,
            toLayer,
            from: file,
            to: target,
            allowed: [fromLayer, ...(options.allow[fromLayer] ?? [])].join(", "),
          },
        });
      }),
      "Program:exit"(node) {
        if (excepted && !broken)
          context.report({ node, messageId: "staleException", data: { file } });
      },
    };
  },
};

/**
 * The import graph of src/ under a root, built once per run (rebuilt when older than a few
 * seconds, for editors that keep ESLint running). The file being linted contributes its edges
 * from its own text (which may not be saved yet).
 * @type {Map<string, { builtAt: number, graph: Map<string, string[]> }>}
 */
const graphs = new Map();
const GRAPH_MAX_AGE_MS = 30_000;

/** @param {string} root */
function graphOf(root) {
  const cached = graphs.get(root);
  if (cached && Date.now() - cached.builtAt < GRAPH_MAX_AGE_MS) return cached.graph;
  /** @type {Map<string, string[]>} */
  const graph = new Map();
  const src = path.join(root, "src");
  const files = fs.existsSync(src)
    ? /** @type {string[]} */ (fs.readdirSync(src, { recursive: true, encoding: "utf8" }))
    : [];
  for (const entry of files) {
    if (!/\.(ts|tsx|mts|cts)$/.test(entry)) continue;
    const file = `src/${slash(entry)}`;
    const text = fs.readFileSync(path.join(root, file), "utf8");
    graph.set(file, edgesOf(root, file, specifiersOf(text)));
  }
  graphs.set(root, { builtAt: Date.now(), graph });
  return graph;
}

/** @param {string} root @param {string} file @param {string[]} specifiers */
function edgesOf(root, file, specifiers) {
  /** @type {string[]} */
  const out = [];
  for (const s of specifiers) {
    const target = resolveImport(root, file, s);
    if (target?.startsWith("src/") && !out.includes(target)) out.push(target);
  }
  return out;
}

/**
 * The shortest path of imports from `start` back to `goal`, or undefined.
 * @param {(file: string) => string[]} next @param {string} start @param {string} goal
 */
function pathBack(next, start, goal) {
  /** @type {Map<string, string | null>} */
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const current = /** @type {string} */ (queue.shift());
    if (current === goal) {
      const out = [];
      for (let at = /** @type {string | null | undefined} */ (current); at; at = previous.get(at)) {
        out.unshift(at);
      }
      return out;
    }
    for (const n of next(current)) {
      if (!previous.has(n)) {
        previous.set(n, current);
        queue.push(n);
      }
    }
  }
  return undefined;
}

/** @type {import("eslint").Rule.RuleModule} */
const noCycles = {
  meta: {
    type: "problem",
    docs: { description: "No module-level import cycle in src/" },
    schema: [{ type: "object", additionalProperties: true }],
    messages: {
      cycle: "Import cycle (docs/ARCHITECTURE.md, the rule): {{cycle}}.",
    },
  },
  create(context) {
    const options = /** @type {LayerOptions} */ (context.options[0]);
    const rules = compile(options);
    const { root, file } = fileOf(context);
    if (!file.startsWith("src/")) return {};
    const graph = graphOf(root);
    /**
     * A known exception's forbidden imports are the edges its fix removes: left out here, so
     * that a cycle they close is reported by the layer rule's exception list only once.
     * @param {string} from
     */
    const next = (from) => {
      const edges = (from === file ? ownEdges : graph.get(from)) ?? [];
      if (!Object.hasOwn(rules.exceptions, from)) return edges;
      const fromLayer = rules.layerOf(from);
      return edges.filter((to) => {
        const toLayer = rules.layerOf(to);
        return !fromLayer || !toLayer || rules.allowed(fromLayer, toLayer, to);
      });
    };
    // The file's own edges come from the text being linted, which may differ from the disk's.
    const ownEdges = edgesOf(root, file, specifiersOf(context.sourceCode.text));
    const reported = new Set();
    return importVisitors(context, (node, specifier) => {
      const target = resolveImport(root, file, specifier);
      if (!target?.startsWith("src/") || reported.has(target)) return;
      if (!next(file).includes(target)) return;
      const back = pathBack(next, target, file);
      if (!back) return;
      reported.add(target);
      context.report({ node, messageId: "cycle", data: { cycle: [file, ...back].join(" → ") } });
    });
  },
};

export default {
  meta: { name: "mainline-layers" },
  rules: { direction, "no-cycles": noCycles },
};
