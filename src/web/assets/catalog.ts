/**
 * The dashboard's static files as the server holds them: in memory, by hashed name, served under
 * `/assets/` with a year of `immutable` caching. An installed package reads `dist/assets/`; from
 * source (tests, `npm run dev`) they are built at first use, so they are never stale.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { AssetManifest, BuiltAsset, IslandName } from "./build.js";

export const ASSET_PREFIX = "/assets/";

/** The package's root: the same from src/web/assets/ and dist/web/assets/. */
const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const BUILT_ASSETS_DIR = path.join(PACKAGE_ROOT, "dist/assets");
const FROM_SOURCE = import.meta.url.endsWith(".ts");

export interface Asset extends BuiltAsset {
  etag: string;
}

/** What an island needs loaded before it (vendor scripts and styles), by stable name. */
const ISLAND_NEEDS: Record<IslandName, { scripts: string[]; styles: string[] }> = {
  confirm: { scripts: [], styles: [] },
  "live-queue": { scripts: [], styles: [] },
};

export class AssetCatalog {
  private readonly byName = new Map<string, Asset>();
  private readonly byFile = new Map<string, Asset>();

  constructor(assets: readonly BuiltAsset[]) {
    for (const asset of assets) {
      const etag = `"${createHash("sha256").update(asset.body).digest("base64url").slice(0, 22)}"`;
      const entry = { ...asset, etag };
      this.byName.set(asset.name, entry);
      this.byFile.set(asset.file, entry);
    }
  }

  /** `/assets/app.3f2a9c1b7d0e.css` for `app.css`; throws for a name that was not built. */
  url(name: string): string {
    const asset = this.byName.get(name);
    if (!asset) throw new Error(`no built asset named ${name}`);
    return `${ASSET_PREFIX}${asset.file}`;
  }

  /** The file `/assets/<file>` names, if it is one. */
  file(file: string): Asset | undefined {
    return this.byFile.get(file);
  }

  /**
   * The stylesheets and scripts a page with these islands loads, in order. Every page gets
   * the stylesheet and the `confirm` island (a few hundred bytes: any form may ask first).
   */
  pageAssets(islands: readonly IslandName[]): { styles: string[]; scripts: string[] } {
    const styles = ["app.css"];
    const scripts: string[] = [];
    for (const island of new Set<IslandName>(["confirm", ...islands])) {
      for (const name of ISLAND_NEEDS[island].styles) if (!styles.includes(name)) styles.push(name);
      for (const name of ISLAND_NEEDS[island].scripts) {
        if (!scripts.includes(name)) scripts.push(name);
      }
      scripts.push(`island/${island}.js`);
    }
    // A name that was not built is left out (a catalog that failed to load is empty).
    const built = (names: string[]) =>
      names.filter((n) => this.byName.has(n)).map((n) => this.url(n));
    return { styles: built(styles), scripts: built(scripts) };
  }

  /** Bytes of the files a page with these islands loads (the page weight budget). */
  bytes(islands: readonly IslandName[]): number {
    const { styles, scripts } = this.pageAssets(islands);
    return [...styles, ...scripts]
      .map((url) => this.file(url.slice(ASSET_PREFIX.length))?.body.length ?? 0)
      .reduce((a, b) => a + b, 0);
  }
}

/** Reads `dist/assets/` (written by `npm run build`). */
export function readBuiltAssets(dir = BUILT_ASSETS_DIR): BuiltAsset[] {
  let manifest: AssetManifest;
  try {
    manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8")) as AssetManifest;
  } catch (error) {
    throw new Error(
      `The dashboard's files are not built (${path.join(dir, "manifest.json")}): run \`npm run build\`.`,
      { cause: error },
    );
  }
  return Object.entries(manifest.files).map(([name, { file, contentType }]) => ({
    name,
    file,
    contentType,
    body: readFileSync(path.join(dir, file)),
  }));
}

let loading: Promise<AssetCatalog> | undefined;

/**
 * The catalog, loaded once per process: built from `src/` when running from source, else read
 * from `dist/assets/`. A failure is not remembered (a build may still come).
 */
export function assetCatalog(): Promise<AssetCatalog> {
  loading ??= (async () => {
    if (FROM_SOURCE) {
      const { buildAssets } = await import("./build.js");
      return new AssetCatalog(await buildAssets(PACKAGE_ROOT));
    }
    return new AssetCatalog(readBuiltAssets());
  })().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
