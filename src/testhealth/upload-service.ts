import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import type { Readable } from "node:stream";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type {
  ServerSecretRecords,
  TestCaseRecords,
  TestSettingsRecords,
  UploadRecords,
} from "./ports.js";
import type { UploadRecord } from "./records.js";
import type { Clock } from "../lib/clock.js";
import { ApiError, isStorageFull } from "../lib/errors.js";
import type { Principal } from "../organizations/service.js";
import {
  BundleTooLargeError,
  type BundleStorage,
  type StoredBundle,
} from "./ingest/bundle-storage.js";
import type { RepositoryAccess } from "./repository-access.js";
import type { PublicRepositoryCaller, PublicRepositoryIds } from "./public-repository-ids.js";
import { HOUR_MS } from "../lib/time.js";

export const UPLOAD_URL_TTL_MS = HOUR_MS;
export const DEFAULT_MAX_BUNDLE_BYTES = 1024 * 1024 * 1024;
const SECRET_NAME = "upload-url-signing";

export interface UploadServiceDependencies {
  testCases: Pick<TestCaseRecords, "quarantinedIds">;
  uploads: Pick<UploadRecords, "create" | "find" | "markReceived" | "list">;
  settings: Pick<TestSettingsRecords, "get">;
  secrets: ServerSecretRecords;
  bundles: BundleStorage;
  access: RepositoryAccess;
  clock: Clock;
  maxBundleBytes: number;
  publicIds: Pick<PublicRepositoryIds, "checkScope" | "takeUploadSlot" | "maxBundleBytes">;
  /** Called once a bundle is stored, so that processing starts at once. */
  onBundleStored: () => void;
}

export interface CreatedUpload {
  id: string;
  idV2: string;
  url: string;
  key: string;
}

/**
 * Trunk's upload protocol (docs/contract.md §4): `createBundleUpload` hands out a signed, single-use,
 * expiring URL on this service; the bundle is `PUT` there without a token and is stored
 * durably before the answer; a worker processes it in the background.
 */
export class UploadService {
  private signingKey: Buffer | undefined;

  constructor(private readonly deps: UploadServiceDependencies) {}

  async createBundleUpload(
    principal: Principal,
    request: { repo: RepoRef; orgUrlSlug: string | null; clientVersion: string | null },
    baseUrl: string,
  ): Promise<CreatedUpload> {
    const now = this.deps.clock.now();
    const repository = await this.deps.access.ensure(
      principal,
      request.orgUrlSlug,
      request.repo,
      now,
    );
    return this.createUpload(principal, repository, request.clientVersion, baseUrl, null);
  }

  /**
   * createBundleUpload for a caller that presented a public repository id: its own repository
   * only, a limited number an hour, and a URL that takes bundles up to the public cap (the cap
   * is part of what the URL's signature covers).
   */
  async createPublicBundleUpload(
    caller: PublicRepositoryCaller,
    request: { repo: RepoRef; orgUrlSlug: string | null; clientVersion: string | null },
    baseUrl: string,
  ): Promise<CreatedUpload> {
    this.deps.publicIds.checkScope(caller, request.orgUrlSlug, request.repo);
    this.deps.publicIds.takeUploadSlot(caller);
    const cap = Math.min(this.deps.publicIds.maxBundleBytes, this.deps.maxBundleBytes);
    return this.createUpload(caller, caller.repository, request.clientVersion, baseUrl, cap);
  }

  private async createUpload(
    owner: { organizationId: string; organizationSlug: string },
    repository: Repository,
    clientVersion: string | null,
    baseUrl: string,
    maxBytes: number | null,
  ): Promise<CreatedUpload> {
    const now = this.deps.clock.now();
    const id = randomUUID();
    const expires = now + UPLOAD_URL_TTL_MS;
    await this.deps.uploads.create({
      id,
      organizationId: owner.organizationId,
      repositoryId: repository.id,
      clientVersion,
      createdAt: now,
      urlExpiresAt: expires,
    });
    const signature = await this.sign(id, expires, maxBytes);
    const limit = maxBytes === null ? "" : `&limit=${maxBytes}`;
    const url = `${baseUrl.replace(/\/+$/, "")}/v1/uploads/${id}?expires=${expires}${limit}&signature=${signature}`;
    return { id, idV2: id, url, key: `uploads/${owner.organizationSlug}/${id}.tar.zst` };
  }

  /** The `PUT` to a signed URL. Resolves once the bundle is on disk and recorded. */
  async receiveBundle(
    id: string,
    query: {
      expires?: string | undefined;
      signature?: string | undefined;
      limit?: string | undefined;
    },
    body: Readable,
  ): Promise<UploadRecord> {
    const expires = Number(query.expires);
    const limit = query.limit === undefined ? null : Number(query.limit);
    const given = Buffer.from(query.signature ?? "", "base64url");
    const expected = Buffer.from(await this.sign(id, expires, limit), "base64url");
    if (
      !Number.isSafeInteger(expires) ||
      (limit !== null && !(Number.isSafeInteger(limit) && limit > 0)) ||
      given.length !== expected.length ||
      !timingSafeEqual(given, expected)
    ) {
      throw new ApiError(
        "forbidden",
        "The upload URL's signature is not valid; ask createBundleUpload for a new URL.",
      );
    }
    const now = this.deps.clock.now();
    if (expires <= now) {
      throw new ApiError(
        "forbidden",
        "The upload URL has expired; ask createBundleUpload for a new one.",
      );
    }
    // The upload is read while the bundle is stored (each takes a round trip or a flush to the
    // disk): the store writes a name of its own, so a URL used twice never touches the bundle
    // stored the first time, and it stops as soon as the read says the upload cannot take one.
    const stop = new AbortController();
    const usable = this.deps.uploads.find(id).then((upload) => {
      if (!upload) throw new ApiError("not_found", "No such upload.");
      if (upload.state !== "awaiting_bundle") throw alreadyUsed();
    });
    // Stops the store as soon as the upload cannot take the bundle (or cannot be read); handled
    // here, so a failure while the store runs, before anything awaits it, is not unhandled.
    usable.catch(() => {
      stop.abort();
    });
    let stored;
    try {
      stored = await this.deps.bundles.store(
        id,
        body,
        limit ?? this.deps.maxBundleBytes,
        stop.signal,
      );
    } catch (error) {
      // What the upload's read says comes first: a URL used twice is a 409 whatever its body.
      await usable;
      throw storeError(error);
    }
    try {
      await usable;
    } catch (error) {
      await this.deps.bundles.remove(stored.path);
      throw error;
    }
    return this.markReceived(id, stored);
  }

  /**
   * A bundle made by Mainline itself (the built-in CI runner's JUnit reports): recorded and
   * processed like an upload, without the signed URL.
   */
  async submitBundle(
    repository: Repository,
    clientVersion: string,
    body: Readable,
  ): Promise<UploadRecord> {
    const id = randomUUID();
    const now = this.deps.clock.now();
    await this.deps.uploads.create({
      id,
      organizationId: repository.organizationId,
      repositoryId: repository.id,
      clientVersion,
      createdAt: now,
      // No URL is handed out; the window only has to cover the store below.
      urlExpiresAt: now + UPLOAD_URL_TTL_MS,
    });
    // Just created, and no URL was handed out for it: nobody else can store its bundle.
    let stored;
    try {
      stored = await this.deps.bundles.store(id, body, this.deps.maxBundleBytes);
    } catch (error) {
      throw storeError(error);
    }
    return this.markReceived(id, stored);
  }

  /**
   * Records a stored bundle as its upload's (if the upload still awaits one: the first of two
   * `PUT`s of one URL wins), then starts its processing. A bundle no upload took is removed.
   */
  private async markReceived(id: string, stored: StoredBundle): Promise<UploadRecord> {
    let received: UploadRecord | undefined;
    try {
      received = await this.deps.uploads.markReceived(id, {
        bundlePath: stored.path,
        bundleBytes: stored.bytes,
        contentHash: stored.sha256,
        receivedAt: this.deps.clock.now(),
      });
    } catch (error) {
      // No row points at the file: it goes, so that the upload is as before and can be retried.
      await this.deps.bundles.remove(stored.path);
      if (isStorageFull(error)) throw bundleStorageFull();
      throw error;
    }
    if (!received) {
      await this.deps.bundles.remove(stored.path);
      throw alreadyUsed();
    }
    this.deps.onBundleStored();
    return received;
  }

  /** Every quarantined test of the repository, whatever the client asked about (docs/contract.md §4). */
  async quarantineConfig(
    principal: Principal,
    request: { repo: RepoRef; orgUrlSlug: string | null },
  ): Promise<{ isDisabled: boolean; testIds: string[] }> {
    this.deps.access.checkOrganization(principal, request.orgUrlSlug);
    let repository;
    try {
      repository = await this.deps.access.find(principal, request.orgUrlSlug, request.repo);
    } catch (error) {
      // A repository that never uploaded has nothing quarantined; the uploader must not fail.
      if (error instanceof ApiError && error.code === "not_found") {
        return { isDisabled: false, testIds: [] };
      }
      throw error;
    }
    return this.loadQuarantine(repository.id);
  }

  private async loadQuarantine(
    repositoryId: string,
  ): Promise<{ isDisabled: boolean; testIds: string[] }> {
    const settings = await this.deps.settings.get(repositoryId);
    if (!settings.quarantine.quarantiningEnabled) return { isDisabled: true, testIds: [] };
    const testIds = await this.deps.testCases.quarantinedIds(repositoryId, settings.quarantine);
    return { isDisabled: false, testIds };
  }

  /** getQuarantineConfig for a public-id caller: its own repository's ids, nothing else. */
  async publicQuarantineConfig(
    caller: PublicRepositoryCaller,
    request: { repo: RepoRef; orgUrlSlug: string | null },
  ): Promise<{ isDisabled: boolean; testIds: string[] }> {
    this.deps.publicIds.checkScope(caller, request.orgUrlSlug, request.repo);
    return this.loadQuarantine(caller.repository.id);
  }

  /** Covers the upload, the expiry and, for capped URLs, the cap (so it cannot be raised). */
  private async sign(id: string, expires: number, limit: number | null): Promise<string> {
    this.signingKey ??= await this.deps.secrets.getOrCreate(SECRET_NAME, this.deps.clock.now());
    const capped = limit === null ? "" : `\u0000limit=${limit}`;
    return createHmac("sha256", this.signingKey)
      .update(`${id}\u0000${expires}${capped}`)
      .digest("base64url");
  }
}

/** Retryable: the upload still awaits its bundle, and its URL works again once there is room. */
function bundleStorageFull(): ApiError {
  return new ApiError(
    "insufficient_storage",
    "The server's disk is full, so the bundle was not stored; retry the same URL later.",
  );
}

function alreadyUsed(): ApiError {
  return new ApiError("conflict", "This upload URL was already used; each URL takes one bundle.");
}

/** What a failed store answers: 413 over the limit, 507 when the disk is full, else itself. */
function storeError(error: unknown): unknown {
  if (error instanceof BundleTooLargeError) {
    return new ApiError("payload_too_large", `The bundle is larger than ${error.limit} bytes.`);
  }
  if (isStorageFull(error)) return bundleStorageFull();
  return error;
}
