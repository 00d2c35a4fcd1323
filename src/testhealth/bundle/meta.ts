/**
 * Tolerant reading of Trunk's `meta.json` (analytics-cli `bundle/src/bundle_meta.rs`), flat or
 * nested, every version from 0.5.29 on (see `parseBundleMeta`). Only the commit SHA and the
 * repository are required; everything else falls back to null.
 */
import { branchFromEnv, cleanBranch, jobNameFrom, jobUrlFrom, prNumberFrom } from "./ci-env.js";
import { findUnstorableText } from "../../lib/text.js";
import { BundleError } from "./errors.js";

export interface BundleRepoRef {
  host: string;
  owner: string;
  name: string;
}

export interface BundleFile {
  /** Where the file sits in the bundle, e.g. `junit/0`. */
  bundlePath: string;
  /** The path on the CI machine (absolute in Trunk's bundles). */
  originalPath: string | null;
  /** Relative to the repo root (uploader 0.5.33+), null before. */
  originalPathRelative: string | null;
  owners: string[];
}

export interface BundleFileSet {
  /** `Junit` or `Internal` (pre-built `.bin` reports). */
  type: string;
  /** The glob the user passed to the uploader. */
  glob: string | null;
  files: BundleFile[];
}

export interface BundleMeta {
  /** The `schema` tag when present (`V0_7_8`), else null; the JSON shape is what we rely on. */
  schema: string | null;
  /** Trunk's meta format version, "1" so far. */
  version: string | null;
  /** E.g. `0.7.8` (Trunk writes the bare version). */
  cliVersion: string | null;
  orgSlug: string | null;
  repo: BundleRepoRef;
  repoUrl: string | null;
  /** Where the repository was checked out on the machine that ran the tests; null when not sent. */
  repoRoot: string | null;
  /** Lowercase hex. For GitHub PR merge commits the uploader already reports the PR head. */
  commitSha: string;
  branch: string | null;
  /** Seconds since the epoch, null when absent or 0 (Trunk's "unknown"). */
  commitEpochSeconds: number | null;
  commitMessage: string | null;
  authorName: string | null;
  authorEmail: string | null;
  prNumber: number | null;
  jobName: string | null;
  jobUrl: string | null;
  variant: string | null;
  /** When the uploader built the bundle, epoch milliseconds; null when absent. */
  uploadTimeMs: number | null;
  bundleUploadId: string | null;
  bundleUploadIdV2: string | null;
  testCommand: string | null;
  /** Where the uploader read CODEOWNERS from, null when it sent none. */
  codeownersPath: string | null;
  fileSets: BundleFileSet[];
  /**
   * Where the uploader put the binary test report that stands for the whole bundle
   * (`internal.bin`, or `internal/<n>` when it was handed one), null when meta.json does not say.
   */
  internalBundledFile: string | null;
  /** The captured CI environment, string values only. */
  envs: Record<string, string>;
  tags: Array<{ key: string; value: string }>;
}

type Json = Record<string, unknown>;

const NESTED_PROPS = ["base_props", "junit_props", "debug_props"] as const;
const SHA = /^[0-9a-f]{7,64}$/i;
const VARIANT_LIMIT = 64;

/**
 * Versions `V0_5_29`, `V0_5_34`, `V0_6_2`, `V0_6_3`, `V0_7_6`, `V0_7_7`, `V0_7_8` all serialize
 * FLAT: the Rust structs nest `base_props`/`junit_props`/`debug_props` but mark them
 * `#[serde(flatten)]` (older releases used transparent newtypes, also flat). Each version only adds
 * top-level fields (`num_files`/`num_tests` 0.5.34, `command_line` 0.6.2, `bundle_upload_id_v2`
 * 0.6.3, `variant` 0.7.6, `internal_bundled_file` 0.7.7, `failed_tests` 0.7.8). A `schema` tag
 * ("V0_7_8") appears when Trunk's services re-serialize a `VersionedBundle`. The nested form, which
 * Trunk's Python/wasm bindings expose, is accepted too.
 */
export function parseBundleMeta(json: unknown): BundleMeta {
  if (!isObject(json)) throw new BundleError("meta.json is not a JSON object");
  // Text that cannot be stored as sent (NUL, unpaired surrogates) fails the bundle with its
  // field named, rather than failing in the database.
  const unstorable = findUnstorableText(json, "");
  if (unstorable) throw new BundleError(`meta.json's ${unstorable.path} ${unstorable.message}`);
  const meta = flattenProps(json);
  const repoSection = objectAt(meta, "repo") ?? {};
  const envs = stringMap(objectAt(meta, "envs"));
  const prNumber = prNumberFrom(envs);
  return {
    schema: stringAt(meta, "schema"),
    version: stringAt(meta, "version"),
    cliVersion: stringAt(meta, "cli_version"),
    orgSlug: stringAt(meta, "org") ?? stringAt(meta, "org_url_slug"),
    repo: repoRefFrom(meta, repoSection),
    repoUrl: stringAt(repoSection, "repo_url") ?? stringAt(meta, "repo_url"),
    repoRoot: stringAt(repoSection, "repo_root") ?? stringAt(meta, "repo_root"),
    commitSha: commitShaFrom(meta, repoSection),
    branch:
      cleanBranch(
        stringAt(repoSection, "repo_head_branch") ?? stringAt(meta, "repo_head_branch"),
      ) ?? branchFromEnv(envs),
    commitEpochSeconds: positiveNumberAt(repoSection, "repo_head_commit_epoch"),
    commitMessage: stringAt(repoSection, "repo_head_commit_message"),
    authorName: stringAt(repoSection, "repo_head_author_name"),
    authorEmail: stringAt(repoSection, "repo_head_author_email"),
    prNumber,
    jobName: jobNameFrom(envs),
    jobUrl: jobUrlFrom(envs, prNumber),
    variant: variantFrom(meta),
    uploadTimeMs: epochMs(positiveNumberAt(meta, "upload_time_epoch")),
    bundleUploadId: stringAt(meta, "bundle_upload_id"),
    bundleUploadIdV2: stringAt(meta, "bundle_upload_id_v2"),
    testCommand: stringAt(meta, "test_command"),
    codeownersPath: stringAt(objectAt(meta, "codeowners") ?? {}, "path"),
    fileSets: arrayAt(meta, "file_sets").filter(isObject).map(fileSetFrom),
    internalBundledFile: stringAt(objectAt(meta, "internal_bundled_file") ?? {}, "path"),
    envs,
    tags: arrayAt(meta, "tags").filter(isObject).flatMap(tagFrom),
  };
}

/** Lifts `base_props` & co. to the top, for metas dumped from Trunk's language bindings. */
function flattenProps(meta: Json): Json {
  let flat: Json = meta;
  for (const key of NESTED_PROPS) {
    const nested = objectAt(meta, key);
    if (nested !== null) flat = { ...nested, ...flat };
  }
  return flat;
}

/** `repo.repo` in Trunk's shape; a bare `{host, owner, name}` or the repo URL as fallbacks. */
function repoRefFrom(meta: Json, repoSection: Json): BundleRepoRef {
  const candidates = [objectAt(repoSection, "repo"), repoSection];
  for (const candidate of candidates) {
    const ref = candidate === null ? null : repoRefOf(candidate);
    if (ref !== null) return ref;
  }
  const url = stringAt(repoSection, "repo_url") ?? stringAt(meta, "repo_url");
  const fromUrl = url === null ? null : repoRefFromUrl(url);
  if (fromUrl !== null) return fromUrl;
  throw new BundleError("meta.json names no repository (repo.repo.host, owner and name)");
}

function repoRefOf(section: Json): BundleRepoRef | null {
  const host = stringAt(section, "host");
  const owner = stringAt(section, "owner");
  const name = stringAt(section, "name");
  return host === null || owner === null || name === null ? null : { host, owner, name };
}

/** The two URL shapes Trunk's `RepoUrlParts::from_url` accepts: scheme://host/owner/name and user@host:owner/name. */
export function repoRefFromUrl(url: string): BundleRepoRef | null {
  const match =
    /^(?:ssh|git|https?|ftps?):\/\/(?:[^/]*?@)?([^/]+)\/(.+)\/([^/]+?)\/?$/.exec(url.trim()) ??
    /^[^/]*?@([^/:]+):(.+)\/([^/]+?)\/?$/.exec(url.trim());
  if (match === null) return null;
  const [, host = "", owner = "", rawName = ""] = match;
  const name = rawName.replace(/\.git$/, "");
  return host === "" || owner === "" || name === "" ? null : { host, owner, name };
}

function commitShaFrom(meta: Json, repoSection: Json): string {
  const sha = stringAt(repoSection, "repo_head_sha") ?? stringAt(meta, "repo_head_sha");
  if (sha === null) throw new BundleError("meta.json has no commit SHA (repo.repo_head_sha)");
  if (!SHA.test(sha)) {
    throw new BundleError(
      `meta.json's commit SHA is not a hexadecimal git SHA: ${sha.slice(0, 80)}`,
    );
  }
  return sha.toLowerCase();
}

/** Trunk caps variants at 64 characters; an empty variant means none. */
function variantFrom(meta: Json): string | null {
  const variant = stringAt(meta, "variant");
  return variant === null ? null : variant.slice(0, VARIANT_LIMIT);
}

/** Trunk writes seconds; a value that can only be milliseconds (after year 33658) is taken as is. */
function epochMs(epoch: number | null): number | null {
  if (epoch === null) return null;
  return epoch >= 1e12 ? Math.trunc(epoch) : Math.trunc(epoch * 1000);
}

function fileSetFrom(set: Json): BundleFileSet {
  return {
    type: stringAt(set, "file_set_type") ?? "Junit",
    glob: stringAt(set, "glob"),
    files: arrayAt(set, "files").filter(isObject).flatMap(bundleFileFrom),
  };
}

function bundleFileFrom(file: Json): BundleFile[] {
  const bundlePath = stringAt(file, "path");
  if (bundlePath === null) return [];
  return [
    {
      bundlePath,
      originalPath: stringAt(file, "original_path"),
      originalPathRelative: stringAt(file, "original_path_rel"),
      owners: arrayAt(file, "owners").filter((owner) => typeof owner === "string"),
    },
  ];
}

function tagFrom(tag: Json): Array<{ key: string; value: string }> {
  const key = stringAt(tag, "key");
  const value = typeof tag.value === "string" ? tag.value : null;
  return key === null || value === null ? [] : [{ key, value }];
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function objectAt(parent: Json, key: string): Json | null {
  const value = parent[key];
  return isObject(value) ? value : null;
}

function arrayAt(parent: Json, key: string): unknown[] {
  const value = parent[key];
  return Array.isArray(value) ? value : [];
}

/** Trimmed non-empty string, else null: Trunk writes "" for unknown values. */
function stringAt(parent: Json, key: string): string | null {
  const value = parent[key];
  if (typeof value !== "string") return null;
  const trimmed = value.trim();
  return trimmed === "" ? null : trimmed;
}

function positiveNumberAt(parent: Json, key: string): number | null {
  const value = parent[key];
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : null;
}

function stringMap(section: Json | null): Record<string, string> {
  const map: Record<string, string> = {};
  if (section === null) return map;
  for (const [key, value] of Object.entries(section)) {
    if (typeof value === "string") map[key] = value;
  }
  return map;
}
