/**
 * Builds the dashboard's static files (islands bundled by esbuild, the stylesheet minified), each
 * named by a content hash, for `npm run build` and, from source, in memory
 * at first use. esbuild is a development dependency: an installed package must never load this
 * module.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The islands: `src/web/islands/<name>.ts`, served as `/assets/<name>.<hash>.js`. */
export const ISLANDS = ["confirm", "live-queue"] as const;
export type IslandName = (typeof ISLANDS)[number];

/** A built file: its stable name (what pages ask for) and its hashed file name. */
export interface BuiltAsset {
  /** `app.css`, `island/confirm.js`. */
  name: string;
  /** `app.3f2a9c1b7d0e.css`: what `/assets/` serves. */
  file: string;
  contentType: string;
  body: Buffer;
}

/** What `dist/assets/manifest.json` holds: stable name → hashed file name. */
export interface AssetManifest {
  version: 1;
  files: Record<string, { file: string; contentType: string }>;
}

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

function hashed(name: string, base: string, ext: string, contentType: string, body: Buffer) {
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 12);
  return { name, file: `${base}.${hash}.${ext}`, contentType, body };
}

/** Every static file of the dashboard, built from the package at `root`. */
export async function buildAssets(root: string): Promise<BuiltAsset[]> {
  const esbuild = await import("esbuild");
  const web = path.join(root, "src/web");
  const islands = await esbuild.build({
    entryPoints: Object.fromEntries(
      ISLANDS.map((name) => [name, path.join(web, "islands", `${name}.ts`)]),
    ),
    outdir: "out",
    bundle: true,
    format: "iife",
    minify: true,
    target: "es2020",
    platform: "browser",
    write: false,
    legalComments: "none",
    charset: "utf8",
    tsconfig: path.join(web, "islands/tsconfig.json"),
    logLevel: "warning",
  });
  const assets: BuiltAsset[] = islands.outputFiles.map((output) => {
    const base = path.basename(output.path, ".js");
    return hashed(`island/${base}.js`, base, "js", JS, Buffer.from(output.contents));
  });
  const css = await esbuild.transform(readFileSync(path.join(web, "styles/app.css"), "utf8"), {
    loader: "css",
    minify: true,
    charset: "utf8",
  });
  assets.push(hashed("app.css", "app", "css", CSS, Buffer.from(css.code)));
  return assets.sort((a, b) => a.name.localeCompare(b.name));
}

/** Writes the files and their manifest into `dir` (emptied first: no stale hashes stay). */
export function writeAssets(dir: string, assets: readonly BuiltAsset[]): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const manifest: AssetManifest = { version: 1, files: {} };
  for (const asset of assets) {
    writeFileSync(path.join(dir, asset.file), asset.body);
    manifest.files[asset.name] = { file: asset.file, contentType: asset.contentType };
  }
  writeFileSync(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
}
