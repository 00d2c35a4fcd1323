// Bundles the standalone uploader (src/cli/uploader.ts) into one dependency-free ES module that
// runs with plain `node`: dist/uploader/mainline-upload.mjs, which the server hands out at
// GET /uploader/mainline-upload.mjs. Part of `npm run build`.
// Usage: node scripts/bundle-uploader.mjs [outfile]
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const outfile = path.resolve(
  process.argv[2] ?? path.join(root, "dist/uploader/mainline-upload.mjs"),
);

// src/version.ts reads package.json beside src/ at run time; the single file has no package.json.
const inlineVersion = {
  name: "inline-version",
  setup(builder) {
    builder.onLoad({ filter: /[\\/]src[\\/]version\.ts$/ }, () => ({
      contents: `export const VERSION = ${JSON.stringify(version)};`,
      loader: "ts",
    }));
  },
};

await build({
  entryPoints: [path.join(root, "src/cli/uploader.ts")],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // Some bundled CommonJS modules call require() for Node's own modules.
  banner: {
    js: [
      `// Mainline's uploader ${version}: one file, no dependencies. Run it with node.`,
      `import { createRequire as __mainlineCreateRequire } from "node:module";`,
      `const require = __mainlineCreateRequire(import.meta.url);`,
    ].join("\n"),
  },
  plugins: [inlineVersion],
  legalComments: "eof",
  logLevel: "warning",
});
console.log(`bundled ${path.relative(root, outfile)}`);
