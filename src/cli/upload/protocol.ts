/**
 * The uploader's side of Trunk's upload protocol: createBundleUpload, a PUT of the bundle to the
 * URL it answers, and the quarantine lookup; plus get-upload to wait for processing.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { setTimeout as sleep } from "node:timers/promises";
import { redactSecrets } from "../../lib/redact.js";
import { VERSION } from "../../version.js";
import { CliError, callApi, type ClientOptions } from "../client.js";
import type { QuarantineConfig } from "./quarantine.js";
import type { TestIdentifier } from "../../testhealth/reports.js";
import { MINUTE_MS } from "../../lib/time.js";
import type { RepoRef } from "../../organizations/repositories.js";

export const CLIENT_VERSION = `mainline ${VERSION}`;

export async function whoami(client: ClientOptions): Promise<string> {
  const answer = await callApi<{ organization?: { slug?: unknown } }>(client, "whoami", {});
  const slug = answer.organization?.slug;
  if (typeof slug !== "string" || slug === "") {
    throw new CliError("The server did not say which organization the token belongs to.");
  }
  return slug;
}

export interface BundleUpload {
  id: string;
  idV2: string;
  url: string;
  key: string;
}

export async function createBundleUpload(
  client: ClientOptions,
  request: { repo: RepoRef; org: string; remoteUrls: readonly string[] },
): Promise<BundleUpload> {
  const answer = await callApi<Partial<Record<keyof BundleUpload, unknown>>>(
    client,
    "metrics/createBundleUpload",
    {
      repo: request.repo,
      orgUrlSlug: request.org,
      clientVersion: CLIENT_VERSION,
      remoteUrls: request.remoteUrls,
    },
  );
  const { id, idV2, url, key } = answer;
  if (typeof id !== "string" || typeof url !== "string") {
    throw new CliError("createBundleUpload answered without an upload id and URL.");
  }
  return {
    id,
    idV2: typeof idV2 === "string" ? idV2 : id,
    url,
    key: typeof key === "string" ? key : "",
  };
}

/** Idle time after which a PUT is abandoned (the transfer itself may take longer). */
const PUT_IDLE_TIMEOUT_MS = MINUTE_MS;

/**
 * PUTs the file at `bundlePath` to `url`, streamed, with its length and no API token. Resolves
 * with the answer's JSON body on 2xx; throws a CliError with the server's message otherwise.
 */
export async function putBundle(url: string, bundlePath: string): Promise<unknown> {
  const target = new URL(url);
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    throw new CliError(`The upload URL is not http(s): ${redactSecrets(url)}`);
  }
  const { size } = await stat(bundlePath);
  const transport = target.protocol === "https:" ? https : http;
  const { status, text } = await new Promise<{ status: number; text: string }>(
    (resolve, reject) => {
      const request = transport.request(
        target,
        {
          method: "PUT",
          headers: { "content-type": "application/octet-stream", "content-length": size },
          timeout: PUT_IDLE_TIMEOUT_MS,
        },
        (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => {
            if (body.length < 65_536) body += chunk;
          });
          response.on("end", () => {
            resolve({ status: response.statusCode ?? 0, text: body });
          });
          response.on("error", reject);
        },
      );
      request.on("timeout", () => {
        request.destroy(new Error("timed out"));
      });
      request.on("error", reject);
      const source = createReadStream(bundlePath);
      source.on("error", (error) => {
        request.destroy(error);
      });
      source.pipe(request);
    },
  ).catch((error: unknown) => {
    const cause = (error as { code?: string }).code ?? (error as Error).message;
    throw new CliError(`The bundle upload to ${target.origin} failed (${cause}).`);
  });
  const parsed = parseJson(text);
  if (status < 200 || status > 299) {
    const message = (parsed as { error?: { message?: unknown } } | undefined)?.error?.message;
    throw new CliError(
      `The server refused the bundle (HTTP ${status}): ${
        typeof message === "string" ? message : text.slice(0, 200) || "no reason given"
      }`,
    );
  }
  return parsed;
}

function parseJson(text: string): unknown {
  try {
    return text === "" ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

export async function getQuarantineConfig(
  client: ClientOptions,
  request: {
    repo: RepoRef;
    org: string;
    remoteUrls: readonly string[];
    testIdentifiers: readonly TestIdentifier[];
  },
): Promise<QuarantineConfig> {
  const answer = await callApi<{ isDisabled?: unknown; testIds?: unknown }>(
    client,
    "metrics/getQuarantineConfig",
    {
      repo: request.repo,
      orgUrlSlug: request.org,
      remoteUrls: request.remoteUrls,
      testIdentifiers: request.testIdentifiers,
    },
  );
  if (typeof answer.isDisabled !== "boolean" || !Array.isArray(answer.testIds)) {
    throw new CliError("getQuarantineConfig answered without isDisabled and testIds.");
  }
  return {
    isDisabled: answer.isDisabled,
    testIds: answer.testIds.filter((id): id is string => typeof id === "string"),
  };
}

export type UploadState = "pending" | "processing" | "processed" | "failed";

export interface UploadStatus {
  id: string;
  state: UploadState;
  reason: string | null;
  tests_passed?: number;
  tests_failed?: number;
  tests_skipped?: number;
  [field: string]: unknown;
}

export interface WaitOptions {
  timeoutMs: number;
  /** First pause between polls; doubles up to 2 s. */
  intervalMs?: number;
}

/** Polls get-upload until the upload is processed or failed; throws when it takes too long. */
export async function waitForUpload(
  client: ClientOptions,
  request: { repo: RepoRef; org: string; uploadId: string },
  options: WaitOptions,
): Promise<UploadStatus> {
  const deadline = Date.now() + options.timeoutMs;
  let interval = options.intervalMs ?? 250;
  for (;;) {
    const answer = await callApi<{ upload?: UploadStatus }>(client, "flaky-tests/get-upload", {
      repo: request.repo,
      org_url_slug: request.org,
      upload_id: request.uploadId,
    });
    const upload = answer.upload;
    if (upload === undefined) throw new CliError("get-upload answered without the upload.");
    if (upload.state === "processed" || upload.state === "failed") return upload;
    if (Date.now() + interval > deadline) {
      throw new CliError(
        `Upload ${request.uploadId} is still ${upload.state} after ${Math.round(options.timeoutMs / 1000)} s.`,
      );
    }
    await sleep(interval);
    interval = Math.min(interval * 2, 2_000);
  }
}
