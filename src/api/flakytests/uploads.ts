import type { IncomingMessage } from "node:http";
import { Type } from "typebox";
import type { TestQueryService } from "../../testhealth/test-queries.js";
import type { UploadService } from "../../testhealth/upload-service.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, EmptyObject, errorResponses, RepoRefSchema } from "../schemas.js";
import type { ApiApp } from "../types.js";
import { OrgRepoFields, PageQuerySchema, PageSchema } from "./schemas.js";
import { presentUpload, UploadSchema } from "./presenters/uploads.js";

const CreateBundleUploadBody = Type.Object({
  repo: RepoRefSchema,
  orgUrlSlug: Type.Optional(Type.Union([Type.String({ maxLength: 63 }), Type.Null()])),
  clientVersion: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  remoteUrls: Type.Optional(Type.Array(Type.String())),
});

const QuarantineConfigBody = Type.Object({
  repo: RepoRefSchema,
  orgUrlSlug: Type.Optional(Type.Union([Type.String({ maxLength: 63 }), Type.Null()])),
  remoteUrls: Type.Optional(Type.Array(Type.String())),
  testIdentifiers: Type.Optional(Type.Array(Type.Object({}))),
});

/** The base URL clients reach us at: MAINLINE_PUBLIC_URL, else what the request was sent to. */
export type BaseUrlResolver = (request: { protocol: string; host: string }) => string;

/** Authenticated upload operations (Trunk's uploader protocol and the uploads listing). */
export function registerUploadRoutes(
  app: ApiApp,
  uploads: Pick<
    UploadService,
    | "createBundleUpload"
    | "createPublicBundleUpload"
    | "quarantineConfig"
    | "publicQuarantineConfig"
  >,
  queries: Pick<TestQueryService, "listUploads" | "getUpload">,
  baseUrl: BaseUrlResolver,
): void {
  app.post(
    "/v1/metrics/createBundleUpload",
    {
      config: { publicRepoId: true },
      schema: {
        tags: ["Uploads"],
        summary: "Start an upload of test results",
        description:
          "Trunk's uploader protocol: answers a signed, single-use URL (valid one hour) to which the bundle (a tar archive, plain, gzip or zstd, with `meta.json` and JUnit files) is `PUT` without a token. The repository is created by its first upload. Instead of a token, the repository's public id may be sent in `x-trunk-public-repo-id` (uploads from forks): then only for that repository, at most 60 uploads an hour, bundles up to 100 MiB.",
        body: CreateBundleUploadBody,
        response: {
          200: Type.Object({
            id: Type.String(),
            idV2: Type.String(),
            url: Type.String(),
            key: Type.String(),
          }),
          ...errorResponses(...COMMON_ERRORS, 403, 429),
        },
      },
    },
    async (request) => {
      const upload = {
        repo: request.body.repo,
        orgUrlSlug: request.body.orgUrlSlug ?? null,
        clientVersion: request.body.clientVersion ?? null,
      };
      if (request.publicCaller) {
        return uploads.createPublicBundleUpload(request.publicCaller, upload, baseUrl(request));
      }
      return uploads.createBundleUpload(principalOf(request), upload, baseUrl(request));
    },
  );

  app.post(
    "/v1/metrics/getQuarantineConfig",
    {
      config: { publicRepoId: true },
      schema: {
        tags: ["Uploads"],
        summary: "Quarantined tests of a repository",
        description:
          "Every quarantined test id of the repository, whatever `testIdentifiers` holds; `isDisabled` when quarantining is off. A repository that never uploaded has none. Also answers to the repository's public id (`x-trunk-public-repo-id`), for that repository only.",
        body: QuarantineConfigBody,
        response: {
          200: Type.Object({ isDisabled: Type.Boolean(), testIds: Type.Array(Type.String()) }),
          ...errorResponses(...COMMON_ERRORS, 403),
        },
      },
    },
    async (request) => {
      const asked = { repo: request.body.repo, orgUrlSlug: request.body.orgUrlSlug ?? null };
      if (request.publicCaller) return uploads.publicQuarantineConfig(request.publicCaller, asked);
      return uploads.quarantineConfig(principalOf(request), asked);
    },
  );

  app.post(
    "/v1/flaky-tests/list-uploads",
    {
      schema: {
        tags: ["Uploads"],
        summary: "Recent uploads of a repository",
        description:
          "Uploads with their state, counts and errors, newest first; paged like the test lists.",
        body: Type.Object({ ...OrgRepoFields, page_query: PageQuerySchema }),
        response: {
          200: Type.Object({ uploads: Type.Array(UploadSchema), page: PageSchema }),
          ...errorResponses(...COMMON_ERRORS, 403, 404),
        },
      },
    },
    async (request) => {
      const { repo, org_url_slug, page_query } = request.body;
      const listed = await queries.listUploads(principalOf(request), {
        orgUrlSlug: org_url_slug,
        repo,
        page: { size: page_query.page_size, token: page_query.page_token },
      });
      return { uploads: listed.items.map(presentUpload), page: listed.page };
    },
  );

  app.post(
    "/v1/flaky-tests/get-upload",
    {
      schema: {
        tags: ["Uploads"],
        summary: "One upload and its processing state",
        body: Type.Object({ ...OrgRepoFields, upload_id: Type.String({ maxLength: 64 }) }),
        response: {
          200: Type.Object({ upload: UploadSchema }),
          ...errorResponses(...COMMON_ERRORS, 403, 404),
        },
      },
    },
    async (request) => {
      const { repo, org_url_slug, upload_id } = request.body;
      const upload = await queries.getUpload(principalOf(request), {
        orgUrlSlug: org_url_slug,
        repo,
        uploadId: upload_id,
      });
      return { upload: presentUpload(upload) };
    },
  );
}

/**
 * Unauthenticated: the signed bundle URL (its signature is the credential) and the uploader's
 * telemetry, which is accepted and discarded. Bodies are streams, never parsed as JSON.
 */
export function registerUnauthenticatedUploadRoutes(app: ApiApp, uploads: UploadService): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => {
    done(null, undefined);
  });

  app.put(
    "/v1/uploads/:id",
    {
      schema: {
        tags: ["Uploads"],
        summary: "Store a bundle (the signed URL of createBundleUpload)",
        description:
          "Any content type; no `x-api-token` (the URL's signature is the credential). 200 once the bundle is stored durably; processing follows in the background.",
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({
          expires: Type.Optional(Type.String()),
          limit: Type.Optional(Type.String()),
          signature: Type.Optional(Type.String()),
        }),
        response: {
          200: Type.Object({ id: Type.String(), state: Type.String() }),
          ...errorResponses(400, 403, 404, 409, 413, 414, 500, 507),
        },
      },
    },
    async (request) => {
      const upload = await uploads.receiveBundle(
        request.params.id,
        request.query,
        request.raw satisfies IncomingMessage,
      );
      return {
        id: upload.id,
        state: upload.state === "awaiting_bundle" ? "pending" : upload.state,
      };
    },
  );

  for (const path of [
    "/v1/flakytests-cli/upload-metrics",
    "/v1/flakytests-uploader/upload-metrics",
  ]) {
    app.post(
      path,
      {
        schema: {
          tags: ["Uploads"],
          summary: "Uploader telemetry (accepted and discarded)",
          response: { 200: EmptyObject },
        },
      },
      async (request) => {
        request.raw.resume();
        await new Promise((resolve) => request.raw.once("end", resolve).once("error", resolve));
        return {};
      },
    );
  }
}
