/**
 * `GET /uploader/mainline-upload.mjs`: the standalone uploader (`mainline upload` and
 * `mainline test` in one dependency-free file that runs with plain `node`), built by
 * `npm run build` (scripts/bundle-uploader.mjs). No token: a CI job fetches it from the Mainline
 * it uploads to. It carries the server's version and the file's SHA-256, so a job can pin it.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ApiError } from "../../lib/errors.js";
import type { ApiApp } from "../types.js";

export const UPLOADER_ROUTE = "/uploader/mainline-upload.mjs";

/** Where the build puts it: dist/uploader/ of the package (src/api/service and dist/api/service alike). */
export const DEFAULT_UPLOADER_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../dist/uploader/mainline-upload.mjs",
);

interface Loaded {
  body: Buffer;
  sha256: string;
}

export function registerUploaderRoute(
  app: ApiApp,
  options: { file?: string | undefined; version: string },
): void {
  const file = options.file ?? DEFAULT_UPLOADER_FILE;
  // Read once: the file only changes with a new build, which comes with a restart.
  let loaded: Promise<Loaded | null> | undefined;
  const load = (): Promise<Loaded | null> =>
    (loaded ??= readFile(file).then(
      (body) => ({ body, sha256: createHash("sha256").update(body).digest("hex") }),
      () => {
        loaded = undefined; // a build may still come; look again next time
        return null;
      },
    ));

  app.get(UPLOADER_ROUTE, { schema: { hide: true } }, async (request, reply) => {
    const uploader = await load();
    if (uploader === null) {
      throw new ApiError(
        "not_found",
        "This server has no built uploader: build it with `npm run build` where Mainline is installed.",
      );
    }
    const etag = `"${uploader.sha256}"`;
    void reply
      .header("cache-control", "no-cache")
      .header("etag", etag)
      .header("x-mainline-version", options.version)
      .header("x-mainline-uploader-sha256", uploader.sha256);
    if (request.headers["if-none-match"] === etag) return reply.code(304).send();
    return reply.type("text/javascript; charset=utf-8").send(uploader.body);
  });
}
