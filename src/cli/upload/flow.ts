/**
 * The upload as `mainline upload` and `mainline test` run it: find the reports, work out the
 * context, read the reports, then create the upload, build the bundle into a file and PUT it.
 */
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { InvalidArgumentError, Option, type Command } from "commander";
import { type RepoRef, repoFullName } from "../../organizations/repositories.js";
import { writeBundle, type WriteBundleOptions } from "../../testhealth/bundle/writer.js";
import { CliError, type ClientOptions } from "../client.js";
import type { CliOutput } from "../context.js";
import { parseRepoArg } from "../repo-arg.js";
import {
  metaEnvs,
  parseCommitArg,
  parsePrArg,
  parseVariantArg,
  resolveContext,
  type UploadContext,
} from "./context.js";
import { commitDetails, findCodeowners, readGitFacts } from "./git.js";
import { expandGlobs } from "../../lib/glob.js";
import { fileProgress } from "./progress.js";
import {
  CLIENT_VERSION,
  createBundleUpload,
  putBundle,
  waitForUpload,
  whoami,
  type UploadStatus,
} from "./protocol.js";
import { describeCounts, readReports, type ReportsSummary } from "../../testhealth/reports.js";

export interface UploadFlags {
  junit: string[];
  repo?: RepoRef;
  org?: string;
  commit?: string;
  branch?: string;
  pr?: number;
  jobName?: string;
  jobUrl?: string;
  variant?: string;
  codeowners?: string;
  dryRun?: boolean;
  output?: string;
  wait?: boolean;
  waitTimeout: number;
  url: string;
  token?: string;
}

function parseSeconds(value: string): number {
  if (!/^\d{1,6}$/.test(value) || Number(value) === 0) {
    throw new InvalidArgumentError("expected a whole number of seconds");
  }
  return Number(value);
}

/** The options `mainline upload` and `mainline test` share. */
export function addUploadOptions(command: Command): Command {
  return command
    .requiredOption(
      "--junit <globs...>",
      "JUnit XML reports: globs relative to the current directory (quote them), e.g. 'test-results/**/*.xml'; `**` skips node_modules and dot-directories",
    )
    .option(
      "--repo <host/owner/name>",
      "the repository, host/owner/name (owner/name: local/owner/name) (default: from `git remote get-url origin`; a clone of a repository Mainline hosts is local/owner/name)",
      parseRepoArg,
    )
    .option("--org <slug>", "the organization (default: the API token's)")
    .option(
      "--commit <sha>",
      "the commit tested (default: git HEAD; required outside a git checkout)",
      parseCommitArg,
    )
    .option(
      "--branch <name>",
      "the branch tested (default: from CI variables, then git; required outside a git checkout without them)",
    )
    .option("--pr <number>", "the pull request number (default: from CI variables)", parsePrArg)
    .option("--job-name <name>", "the CI job's name (default: from CI variables)")
    .option("--job-url <url>", "the CI job's page (default: from CI variables)")
    .option(
      "--variant <variant>",
      "a variant (e.g. an OS) that makes separate tests",
      parseVariantArg,
    )
    .option(
      "--codeowners <path>",
      "the CODEOWNERS file (default: .github/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS or .gitlab/CODEOWNERS of the checkout)",
    )
    .option("--dry-run", "build the bundle and show what would be uploaded; send nothing")
    .option("--output <file>", "also save the bundle (tar.gz) to this file")
    .option("--wait", "wait until the server has processed the upload and show the outcome")
    .addOption(
      new Option("--wait-timeout <seconds>", "how long --wait waits")
        .default(120)
        .argParser(parseSeconds),
    )
    .addOption(
      new Option("--url <url>", "Mainline's address")
        .env("MAINLINE_URL")
        .default("http://127.0.0.1:8080"),
    )
    .addOption(new Option("--token <token>", "API token").env("MAINLINE_TOKEN"));
}

/** Where the upload's own messages go: standard output for `upload`, standard error for `test`. */
export interface Io {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  out: (line: string) => void;
  err: CliOutput;
}

export interface Located {
  context: UploadContext;
  files: string[];
  repoRoot: string;
  codeowners: string | null;
}

export interface Prepared extends Located {
  /** "" in a dry run that could not ask the server. */
  org: string;
  summary: ReportsSummary;
}

export interface SentUpload {
  /** Null in a dry run. */
  uploadId: string | null;
  bundleBytes: number;
  processing: UploadStatus | null;
}

const client = (flags: UploadFlags): ClientOptions => ({ url: flags.url, token: flags.token });

function definedEnv(env: Io["env"]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) result[key] = value;
  return result;
}

const quoteList = (patterns: readonly string[]) => patterns.map((p) => `'${p}'`).join(", ");

function splitPatterns(patterns: readonly string[]): string[] {
  return patterns.flatMap((p) => p.split(",")).filter((p) => p.trim() !== "");
}

/**
 * The reports that exist before `mainline test` runs its command, with their modification times,
 * and when the command started: only reports the command wrote may count (`freshReports`).
 */
export interface ReportsBefore {
  startedAtMs: number;
  mtimes: ReadonlyMap<string, number>;
}

/** Notes the reports matching --junit now; call it right before starting the command. */
export async function reportsBefore(flags: UploadFlags, io: Io): Promise<ReportsBefore> {
  const expansion = await expandGlobs(splitPatterns(flags.junit), io.cwd).catch(() => null);
  const mtimes = new Map<string, number>();
  for (const file of expansion?.files ?? []) {
    const found = await stat(file).catch(() => null);
    if (found !== null) mtimes.set(file, found.mtimeMs);
  }
  return { startedAtMs: Date.now(), mtimes };
}

/**
 * The files written while the command ran: new ones, ones whose modification time changed, and
 * ones modified at or after its start. A report left from an earlier run is none of these.
 */
export async function freshReports(
  files: readonly string[],
  before: ReportsBefore,
): Promise<{ fresh: string[]; stale: string[] }> {
  const fresh: string[] = [];
  const stale: string[] = [];
  for (const file of files) {
    const mtime = (await stat(file).catch(() => null))?.mtimeMs;
    const earlier = before.mtimes.get(file);
    const written =
      earlier === undefined ||
      mtime === undefined ||
      mtime !== earlier ||
      mtime >= before.startedAtMs;
    (written ? fresh : stale).push(file);
  }
  return { fresh, stale };
}

/** How `locate` picks the reports. */
export interface LocateOptions {
  /** `mainline test`: only reports written since then are taken. */
  writtenSince?: ReportsBefore;
  /** `mainline upload`: a glob that matches no file is an error, not a warning. */
  everyGlobMatches?: boolean;
}

/** The context (flags, CI variables, git), the report files and CODEOWNERS. No network. */
export async function locate(
  flags: UploadFlags,
  io: Io,
  { writtenSince, everyGlobMatches = false }: LocateOptions = {},
): Promise<Located> {
  const patterns = splitPatterns(flags.junit);
  const git = await readGitFacts(io.cwd, io.env);
  const context = resolveContext(flags, definedEnv(io.env), git);
  const expansion = await expandGlobs(patterns, io.cwd);
  if (expansion.files.length === 0 || (everyGlobMatches && expansion.unmatched.length > 0)) {
    const unmatched = expansion.files.length === 0 ? patterns : expansion.unmatched;
    throw new CliError(`No file matches --junit ${quoteList(unmatched)} (in ${io.cwd}).`);
  }
  if (expansion.unmatched.length > 0) {
    io.err.write(`mainline: warning: no file matches ${quoteList(expansion.unmatched)}\n`);
  }
  let files = expansion.files;
  if (writtenSince !== undefined) {
    const { fresh, stale } = await freshReports(files, writtenSince);
    const listed = stale
      .slice(0, 5)
      .map((file) => path.relative(io.cwd, file) || file)
      .join(", ");
    const older = `${stale.length} report(s) matching --junit ${quoteList(patterns)} predate the command (${listed}${stale.length > 5 ? ", …" : ""})`;
    if (fresh.length === 0) {
      throw new CliError(`The command wrote no report: ${older}; they are not uploaded.`);
    }
    if (stale.length > 0) io.err.write(`mainline: warning: ${older}; they are not uploaded\n`);
    files = fresh;
  }
  const repoRoot = git.topLevel ?? io.cwd;
  let codeowners: string | null;
  if (flags.codeowners !== undefined) {
    codeowners = path.resolve(io.cwd, flags.codeowners);
    const found = await stat(codeowners).catch(() => null);
    if (found?.isFile() !== true) throw new CliError(`No CODEOWNERS file at ${flags.codeowners}.`);
  } else {
    codeowners = await findCodeowners(repoRoot);
  }
  return { context, files, repoRoot, codeowners };
}

/** `--org`, else the token's organization (a dry run does without the server). */
export async function resolveOrg(flags: UploadFlags, io: Io): Promise<string> {
  if (flags.org !== undefined) return flags.org;
  if (flags.dryRun !== true) return whoami(client(flags));
  if (flags.token === undefined) return "";
  return whoami(client(flags)).catch((error: unknown) => {
    io.err.write(`mainline: warning: ${(error as Error).message}\n`);
    return "";
  });
}

/**
 * Reads every report (with a progress line on standard error). `mainline test` warns about
 * unreadable ones and uploads them all the same; `mainline upload` (`onlyJunit`) refuses them:
 * a line per file, then an error, before anything is sent.
 */
export async function readAll(
  located: Located,
  io: Io,
  { onlyJunit = false }: { onlyJunit?: boolean } = {},
): Promise<ReportsSummary> {
  const summary = await readReports(located.files, fileProgress(io.err));
  for (const { path: file, reason } of summary.unreadable) {
    const name = path.relative(io.cwd, file) || file;
    io.err.write(
      onlyJunit
        ? `mainline: ${name} is not a JUnit XML report: ${reason}\n`
        : `mainline: warning: ${name} is not a readable JUnit report (${reason}); it is uploaded but its tests are not counted here\n`,
    );
  }
  if (onlyJunit && summary.unreadable.length > 0) {
    throw new CliError(
      `Nothing was uploaded: ${summary.unreadable.length} of ${summary.files} file(s) matching --junit are not JUnit XML reports (XML whose root is <testsuites> or <testsuite>).`,
    );
  }
  return summary;
}

async function bundleOptions(
  prepared: Prepared,
  flags: UploadFlags,
  io: Io,
  extra: { ids?: { id: string; idV2: string }; testCommand?: string },
): Promise<WriteBundleOptions> {
  const { context } = prepared;
  const details = await commitDetails(prepared.repoRoot, context.commitSha, io.env);
  return {
    meta: {
      orgSlug: prepared.org,
      repo: context.repo,
      commitSha: context.commitSha,
      cliVersion: CLIENT_VERSION,
      uploadTimeEpochSeconds: Math.floor(Date.now() / 1000),
      repoRoot: prepared.repoRoot,
      glob: splitPatterns(flags.junit).join(","),
      envs: metaEnvs(context),
      ...(context.remoteUrl === null ? {} : { repoUrl: context.remoteUrl }),
      ...(context.branch === null ? {} : { branch: context.branch }),
      ...(context.variant === "" ? {} : { variant: context.variant }),
      ...(details === null
        ? {}
        : {
            commitEpochSeconds: details.epochSeconds,
            commitMessage: details.message,
            authorName: details.authorName,
            authorEmail: details.authorEmail,
          }),
      ...(extra.ids === undefined
        ? {}
        : { bundleUploadId: extra.ids.id, bundleUploadIdV2: extra.ids.idV2 }),
      ...(extra.testCommand === undefined ? {} : { testCommand: extra.testCommand }),
    },
    junitFiles: prepared.files.map((file) => ({ originalPath: file, diskPath: file })),
    ...(prepared.codeowners === null
      ? {}
      : { codeowners: { originalPath: prepared.codeowners, diskPath: prepared.codeowners } }),
  };
}

/** Writes the bundle to `target`, streamed from the reports on disk; answers its size. */
async function writeBundleFile(options: WriteBundleOptions, target: string): Promise<number> {
  try {
    await pipeline(writeBundle(options), createWriteStream(target));
  } catch (error) {
    throw new CliError(`Cannot build the bundle: ${(error as Error).message}`);
  }
  return (await stat(target)).size;
}

function printPlan(prepared: Prepared, io: Io, bundleBytes: number, saved: string | null): void {
  const { context, summary } = prepared;
  const rel = (file: string) => path.relative(io.cwd, file) || file;
  const rows: [string, string][] = [
    ["repository", repoFullName(context.repo)],
    ["organization", prepared.org === "" ? "(the token's; pass --org or --token)" : prepared.org],
    ["commit", context.commitSha],
    ["branch", context.branch ?? "(unknown)"],
    ["pull request", context.prNumber === null ? "(none)" : String(context.prNumber)],
    ["job", context.jobName ?? "(unknown)"],
    ["job URL", context.jobUrl ?? "(unknown)"],
    ["variant", context.variant === "" ? "(none)" : context.variant],
    ["codeowners", prepared.codeowners === null ? "(none)" : rel(prepared.codeowners)],
    ["tests", describeCounts(summary.counts)],
    ["bundle", `${bundleBytes} bytes${saved === null ? "" : `, saved to ${saved}`}`],
    ["files", String(prepared.files.length)],
  ];
  for (const [key, value] of rows) io.out(`${key.padEnd(12)}  ${value}`);
  const shown = prepared.files.slice(0, 50);
  for (const file of shown) io.out(`  ${rel(file)}`);
  if (prepared.files.length > shown.length) {
    io.out(`  … and ${prepared.files.length - shown.length} more`);
  }
}

/** Builds and (unless a dry run) uploads the bundle; throws a CliError on any failure. */
export async function send(
  prepared: Prepared,
  flags: UploadFlags,
  io: Io,
  extra: { testCommand?: string } = {},
): Promise<SentUpload> {
  const workDir = await mkdtemp(path.join(tmpdir(), "mainline-upload-"));
  try {
    const target =
      flags.output === undefined
        ? path.join(workDir, "bundle.tar.gz")
        : path.resolve(io.cwd, flags.output);
    if (flags.dryRun === true) {
      const bytes = await writeBundleFile(await bundleOptions(prepared, flags, io, extra), target);
      io.out("Dry run: nothing was uploaded.");
      printPlan(prepared, io, bytes, flags.output ?? null);
      return { uploadId: null, bundleBytes: bytes, processing: null };
    }
    const created = await createBundleUpload(client(flags), {
      repo: prepared.context.repo,
      org: prepared.org,
      remoteUrls: prepared.context.remoteUrl === null ? [] : [prepared.context.remoteUrl],
    });
    const options = await bundleOptions(prepared, flags, io, { ...extra, ids: created });
    const bytes = await writeBundleFile(options, target);
    await putBundle(created.url, target);
    io.out(
      `Uploaded ${created.id}: ${prepared.files.length} file(s), ${describeCounts(prepared.summary.counts)} for ${repoFullName(prepared.context.repo)} at ${prepared.context.commitSha.slice(0, 12)}.`,
    );
    let processing: UploadStatus | null = null;
    if (flags.wait === true) {
      processing = await waitForUpload(
        client(flags),
        { repo: prepared.context.repo, org: prepared.org, uploadId: created.id },
        { timeoutMs: flags.waitTimeout * 1000 },
      );
    }
    return { uploadId: created.id, bundleBytes: bytes, processing };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

export function describeProcessing(status: UploadStatus): string {
  if (status.state === "failed") {
    return `Processing failed: ${status.reason ?? "no reason given"}`;
  }
  const counts =
    typeof status.tests_passed === "number" &&
    typeof status.tests_failed === "number" &&
    typeof status.tests_skipped === "number"
      ? `: ${describeCounts({ passed: status.tests_passed, failed: status.tests_failed, skipped: status.tests_skipped })}`
      : "";
  return `Processed${counts}.`;
}
