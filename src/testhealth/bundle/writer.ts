/**
 * Builds upload bundles in Trunk's layout (`meta.json` first, then `junit/0`…`junit/<n>`, then
 * `CODEOWNERS`), for our own uploader. Trunk compresses with zstd; we write gzip because Node 20
 * has no zstd encoder, and our reader accepts both.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { relative, isAbsolute } from "node:path";
import { Readable, pipeline } from "node:stream";
import { createGzip } from "node:zlib";
import { pack as tarPack, type Pack } from "tar-stream";
import type { BundleRepoRef } from "./meta.js";
import { writableAgain } from "./tar.js";

/** A file's bytes, given directly or read from disk while the archive streams out. */
export type FileContent = { data: Uint8Array | string } | { diskPath: string };

export interface ArchiveEntry {
  name: string;
  content: FileContent;
}

export interface ArchiveOptions {
  /** Gzip the tar (default true). */
  gzip?: boolean;
  /** Modification time written in every header; fixed so that equal inputs give equal bundles. */
  mtime?: Date;
}

export type BundleInputFile = { originalPath: string } & FileContent;

/** What our uploader knows about a run; turned into Trunk's `meta.json` by `trunkMetaJson`. */
export interface BundleMetaInput {
  orgSlug: string;
  repo: BundleRepoRef;
  commitSha: string;
  cliVersion: string;
  /** Seconds since the epoch; supplied by the caller so that this module stays deterministic. */
  uploadTimeEpochSeconds: number;
  repoUrl?: string;
  /** Used to make `original_path_rel`; paths outside it are kept as given. */
  repoRoot?: string;
  branch?: string;
  commitEpochSeconds?: number;
  commitMessage?: string;
  authorName?: string;
  authorEmail?: string;
  bundleUploadId?: string;
  bundleUploadIdV2?: string;
  variant?: string;
  envs?: Readonly<Record<string, string>>;
  tags?: ReadonlyArray<{ key: string; value: string }>;
  testCommand?: string;
  /** The glob the files came from, recorded in the file set. */
  glob?: string;
}

export interface WriteBundleOptions extends ArchiveOptions {
  meta: BundleMetaInput;
  junitFiles: readonly BundleInputFile[];
  codeowners?: BundleInputFile;
}

const META_FORMAT_VERSION = "1";

/** The bundle as a gzip (by default) stream; file errors (missing file) surface as stream errors. */
export function writeBundle(options: WriteBundleOptions): Readable {
  const entries: ArchiveEntry[] = [
    { name: "meta.json", content: { data: JSON.stringify(trunkMetaJson(options)) } },
    ...options.junitFiles.map((file, index) => ({ name: junitPath(index), content: file })),
  ];
  if (options.codeowners !== undefined) {
    entries.push({ name: "CODEOWNERS", content: options.codeowners });
  }
  const mtime = options.mtime ?? new Date(options.meta.uploadTimeEpochSeconds * 1000);
  return writeArchive(entries, { gzip: options.gzip ?? true, mtime });
}

/** For small bundles (tests, dry runs). */
export async function writeBundleBuffer(options: WriteBundleOptions): Promise<Buffer> {
  return collect(writeBundle(options));
}

/** Any tar (or tar.gz) from named entries; also what tests use to build odd bundles. */
export function writeArchive(
  entries: readonly ArchiveEntry[],
  options: ArchiveOptions = {},
): Readable {
  const pack = tarPack();
  void fillPack(pack, entries, options.mtime ?? new Date(0));
  const tar = Readable.from(pack);
  if (options.gzip === false) return tar;
  return pipeline(tar, createGzip(), () => undefined);
}

export async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) {
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks);
}

function junitPath(index: number): string {
  return `junit/${index}`;
}

/** Trunk's `BundleMetaV0_7_8`, every field present so that Trunk's own services could read it too. */
export function trunkMetaJson(options: WriteBundleOptions): Record<string, unknown> {
  const { meta } = options;
  const files = options.junitFiles.map((file, index) => ({
    original_path: file.originalPath,
    original_path_rel: relativeToRoot(file.originalPath, meta.repoRoot),
    path: junitPath(index),
    owners: [],
    team: null,
  }));
  const bundleUploadId = meta.bundleUploadId ?? "";
  return {
    version: META_FORMAT_VERSION,
    cli_version: meta.cliVersion,
    org: meta.orgSlug,
    repo: {
      repo: meta.repo,
      repo_root: meta.repoRoot ?? "",
      repo_url: meta.repoUrl ?? "",
      repo_head_sha: meta.commitSha,
      repo_head_sha_short: meta.commitSha.slice(0, 7),
      repo_head_branch: meta.branch ?? "",
      repo_head_commit_epoch: meta.commitEpochSeconds ?? 0,
      repo_head_commit_message: meta.commitMessage ?? "",
      repo_head_author_name: meta.authorName ?? "",
      repo_head_author_email: meta.authorEmail ?? "",
    },
    bundle_upload_id: bundleUploadId,
    tags: meta.tags ?? [],
    file_sets: [{ file_set_type: "Junit", files, glob: meta.glob ?? "", resolved_status: null }],
    envs: meta.envs ?? {},
    upload_time_epoch: meta.uploadTimeEpochSeconds,
    test_command: meta.testCommand ?? null,
    os_info: null,
    quarantined_tests: [],
    codeowners: options.codeowners === undefined ? null : { path: options.codeowners.originalPath },
    use_uncloned_repo: null,
    num_files: files.length,
    num_tests: 0,
    command_line: "",
    bundle_upload_id_v2: meta.bundleUploadIdV2 ?? bundleUploadId,
    variant: meta.variant ?? null,
    internal_bundled_file: null,
    failed_tests: [],
  };
}

function relativeToRoot(path: string, root: string | undefined): string {
  if (root === undefined) return path;
  const inside = relative(root, path);
  return inside === "" || inside.startsWith("..") || isAbsolute(inside) ? path : inside;
}

/** Never rejects: a failure (unreadable file) destroys the pack, and the reader of the archive sees it. */
async function fillPack(pack: Pack, entries: readonly ArchiveEntry[], mtime: Date): Promise<void> {
  try {
    for (const entry of entries) {
      if ("data" in entry.content) await addBytes(pack, entry.name, entry.content.data, mtime);
      else await addDiskFile(pack, entry.name, entry.content.diskPath, mtime);
    }
    pack.finalize();
  } catch (error) {
    pack.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

function addBytes(pack: Pack, name: string, data: Uint8Array | string, mtime: Date): Promise<void> {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  return new Promise((resolve, reject) => {
    pack.entry({ name, size: bytes.length, mtime, mode: 0o644 }, bytes, (error) => {
      if (error) reject(error);
      else resolve();
    });
  });
}

/** Streams the file in; the header needs its size first, so the file must not change meanwhile. */
async function addDiskFile(pack: Pack, name: string, path: string, mtime: Date): Promise<void> {
  const { size } = await stat(path);
  let settle: (error?: Error | null) => void = () => undefined;
  const written = new Promise<void>((resolve, reject) => {
    settle = (error) => {
      if (error) reject(error);
      else resolve();
    };
  });
  const sink = pack.entry({ name, size, mtime, mode: 0o644 }, (error) => {
    settle(error);
  });
  for await (const chunk of createReadStream(path)) {
    if (!sink.write(chunk)) await writableAgain(sink);
  }
  sink.end(null);
  await written;
}
