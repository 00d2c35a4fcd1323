/**
 * GET /uploader/mainline-upload.mjs on a server whose package has no built uploader: a 404 with
 * the error envelope that says how to build it; once the file exists, it is served (the route
 * looks again rather than remembering the miss). The built file itself: test/e2e/package.test.ts.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Fastify from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { afterAll, describe, expect, it } from "vitest";
import { installErrorHandling } from "../../src/api/plugins/errors.js";
import { registerUploaderRoute, UPLOADER_ROUTE } from "../../src/api/service/uploader.js";

const dir = mkdtempSync(path.join(tmpdir(), "mainline-uploader-route-"));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("GET /uploader/mainline-upload.mjs", () => {
  it("404 with the envelope until the uploader is built, then the file", async () => {
    const file = path.join(dir, "mainline-upload.mjs");
    const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
    installErrorHandling(app, new Map());
    registerUploaderRoute(app, { file, version: "9.9.9" });
    await app.ready();

    const missing = await app.inject({ method: "GET", url: UPLOADER_ROUTE });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({
      error: {
        code: "not_found",
        message:
          "This server has no built uploader: build it with `npm run build` where Mainline is installed.",
      },
    });

    const text = 'console.log("uploader");\n';
    writeFileSync(file, text);
    const found = await app.inject({ method: "GET", url: UPLOADER_ROUTE });
    expect(found.statusCode).toBe(200);
    expect(found.body).toBe(text);
    expect(found.headers["x-mainline-version"]).toBe("9.9.9");
    expect(found.headers["x-mainline-uploader-sha256"]).toBe(
      createHash("sha256").update(text).digest("hex"),
    );
    await app.close();
  });
});
