// Builds the dashboard's static files into dist/assets/ (content-hashed names + manifest.json):
// the islands bundled by esbuild and the stylesheet. Part of `npm run build`, after
// tsc (it runs the compiled dist/web/assets/build.js, the same code the server uses from source).
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { buildAssets, writeAssets } = await import(
  pathToFileURL(path.join(root, "dist/web/assets/build.js")).href
);
const assets = await buildAssets(root);
const dir = path.join(root, "dist/assets");
writeAssets(dir, assets);
const bytes = assets.reduce((sum, a) => sum + a.body.length, 0);
console.log(`built ${assets.length} dashboard files (${bytes} bytes) into dist/assets/`);
