/**
 * Starts git from a long-lived POSIX shell instead of the server's own process.
 *
 * `child_process.spawn` forks the calling process synchronously, and the fork's cost grows with
 * the caller's memory: on a 2-core VM a server of ~200 MiB blocked its event loop for tens of
 * milliseconds per git command. A bare Node helper process (the former way) paid less but still
 * ~2–3 ms of CPU per command for its own fork, its pipes and their events: measured, a git command
 * cost the machine 3.7–5.6 ms that way against 1.8 ms from a shell. So the commands go to one
 * `/bin/sh` (dash on Debian: a process of a few hundred KiB), one line each, run in the background
 * so that they overlap:
 *
 *     { cd DIR || …; unset V; A=value git ARGS <IN >OUT 2>ERR; echo "ID $?"; } & echo "ID pid $!"
 *
 * Every argument, directory and value is single-quoted (nothing is ever interpreted by the shell);
 * standard input, output and error are files in a scratch directory of this spawner's (in memory
 * where `/dev/shm` has room), read when the command has ended and reused by later commands. The
 * shell answers on its standard output with the job's process id and, when the job ends, its exit
 * status; the spawner then has the shell `wait` for that job, so that finished jobs leave neither
 * zombies nor entries in the shell's job table. If the shell dies, the commands it was running
 * fail and the next one starts a new shell. A command killed by a signal reports the shell's
 * status for it (128 + the signal's number) as its exit code.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Readable, Writable } from "node:stream";
import path from "node:path";

/** What `runGit` asks for: always `git`, an argument list, never interpreted by a shell. */
export interface SpawnRequest {
  args: readonly string[];
  cwd: string | undefined;
  /** Variables on top of the shared environment (or replacing some of it) for this command. */
  env: Readonly<Record<string, string | undefined>>;
  input: string;
}

export interface SpawnOutcome {
  stdout: string;
  stderr: string;
  code: number;
}

interface Pending {
  resolve: (outcome: SpawnOutcome) => void;
  reject: (error: Error) => void;
  /** The command's files: `${files}.in`, `.out`, `.err`, named by a slot that is reused. */
  files: string;
  slot: number;
  largeInput: boolean;
  pid?: number;
  /** The exit status; null when the working directory was missing. */
  status?: number | null;
}

interface Shell {
  process: ChildProcess;
  /** The shell's standard input (the commands) and output (its answers). */
  commands: Writable;
  answers: Readable;
  /** Whether the answers' pipe keeps this process alive (only while commands run). */
  holding: Holding;
  scratch: string;
  /** Slots (file names) of finished commands, reused: a file truncated costs less than removed. */
  free: number[];
  slots: number;
  /** What the shell printed after the last complete line. */
  partial: string;
  removeScratch: () => void;
}

/** A pipe's handle, which may or may not keep the event loop alive (a child's pipes are sockets). */
interface Holding {
  ref: () => void;
  unref: () => void;
}

function holding(stream: Readable | Writable): Holding {
  const handle = stream as Partial<Holding>;
  return {
    ref: () => handle.ref?.call(stream),
    unref: () => handle.unref?.call(stream),
  };
}

/** Output above this many bytes is removed once read. */
const LARGE = 1 << 20;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One shell word holding exactly `text`. */
export function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The shell line that runs one command as job `id`, its files named `${files}.{in,out,err}`. */
export function commandLine(id: number, request: SpawnRequest, files: string): string {
  const parts: string[] = [];
  if (request.cwd !== undefined) {
    parts.push(`cd ${quote(request.cwd)} 2>/dev/null || { echo "${String(id)} nocwd"; exit; };`);
  }
  const assignments: string[] = [];
  for (const [name, value] of Object.entries(request.env)) {
    if (value === undefined) parts.push(`unset ${name};`);
    else assignments.push(`${name}=${quote(value)}`);
  }
  const input = request.input === "" ? "/dev/null" : quote(`${files}.in`);
  const command = [...assignments, "git", ...request.args.map(quote)].join(" ");
  parts.push(`${command} <${input} >${quote(`${files}.out`)} 2>${quote(`${files}.err`)};`);
  parts.push(`echo "${String(id)} $?";`);
  return `{ ${parts.join(" ")} } & echo "${String(id)} pid $!"\n`;
}

/**
 * Where the commands' files go: memory (`/dev/shm`) where there is room to spare (a container's
 * is 64 MiB by default), else the system's temporary directory.
 */
function scratchParent(): string {
  try {
    const { bavail, bsize } = statfsSync("/dev/shm");
    if (bavail * bsize >= 512 * 1024 * 1024) return "/dev/shm";
  } catch {
    // no /dev/shm here
  }
  return tmpdir();
}

const SCRATCH_PREFIX = "mainline-git-";
const abandonedRemoved = new Set<string>();

/**
 * Removes, once per process and directory, the scratch directories of processes that are gone
 * (a process killed outright cannot remove its own): each is named after its process's id.
 */
export function removeAbandoned(parent: string): void {
  if (abandonedRemoved.has(parent)) return;
  abandonedRemoved.add(parent);
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = new RegExp(`^${SCRATCH_PREFIX}(\\d+)-`).exec(entry)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    try {
      rmSync(path.join(parent, entry), { recursive: true, force: true });
    } catch {
      // another user's: theirs to remove
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it lives, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Why a request cannot be run at all (nothing is started then). */
function refusal(request: SpawnRequest): string | null {
  for (const name of Object.keys(request.env)) {
    if (!NAME.test(name)) return `"${name}" is not a variable name`;
  }
  const texts = [...request.args, request.cwd ?? "", ...Object.values(request.env)];
  if (texts.some((text) => text?.includes("\0"))) return "an argument holds a NUL byte";
  return null;
}

export class GitSpawner {
  /**
   * `sharedEnv` gives the environment every command starts from; it is read each time a shell
   * starts (so a change to it reaches the commands after the next shell start, not before).
   */
  constructor(private readonly sharedEnv: () => NodeJS.ProcessEnv = () => ({})) {}

  private shell: Shell | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  run(request: SpawnRequest): Promise<SpawnOutcome> {
    const refused = refusal(request);
    if (refused !== null) return Promise.reject(new Error(`git could not be started: ${refused}`));
    const shell = this.shell ?? this.start();
    const id = this.nextId++;
    const slot = shell.free.pop() ?? shell.slots++;
    const files = path.join(shell.scratch, String(slot));
    if (request.input !== "") {
      try {
        writeFileSync(`${files}.in`, request.input);
      } catch (error) {
        shell.free.push(slot);
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    }
    return new Promise<SpawnOutcome>((resolve, reject) => {
      this.pending.set(id, {
        resolve,
        reject,
        files,
        slot,
        largeInput: request.input.length > LARGE,
      });
      // While commands run, the shell keeps this process alive (a CLI waiting for git).
      if (this.pending.size === 1) shell.holding.ref();
      shell.commands.write(commandLine(id, request, files));
    });
  }

  /** Stops the shell (commands still running fail); the next command starts a new one. */
  stop(): void {
    const shell = this.shell;
    if (!shell) return;
    this.gone(shell, new Error("the git shell process was stopped"));
    shell.process.kill();
  }

  /** The shell's process id, or null when none runs. */
  get pid(): number | null {
    return this.shell?.process.pid ?? null;
  }

  private start(): Shell {
    const parent = scratchParent();
    removeAbandoned(parent);
    const scratch = mkdtempSync(path.join(parent, `${SCRATCH_PREFIX}${String(process.pid)}-`));
    const child = spawn("/bin/sh", [], {
      env: this.sharedEnv(),
      stdio: ["pipe", "pipe", "inherit"],
    });
    const removeScratch = () => {
      rmSync(scratch, { recursive: true, force: true });
    };
    process.once("exit", removeScratch);
    const { stdin: commands, stdout: answers } = child;
    const shell: Shell = {
      process: child,
      commands,
      answers,
      holding: holding(answers),
      scratch,
      free: [],
      slots: 0,
      partial: "",
      removeScratch,
    };
    this.shell = shell;
    answers.setEncoding("utf8");
    answers.on("data", (chunk: string) => {
      const lines = (shell.partial + chunk).split("\n");
      shell.partial = lines.pop() ?? "";
      for (const line of lines) this.answer(shell, line);
    });
    // A write after the shell died fails; the exit below fails the commands.
    commands.on("error", () => undefined);
    child.on("exit", (code, signal) => {
      this.gone(shell, new Error(`the git shell process exited (${signal ?? String(code)})`));
    });
    child.on("error", (error) => {
      this.gone(shell, new Error(`the git shell process failed: ${error.message}`));
    });
    // Idle, the shell does not keep this process alive.
    child.unref();
    shell.holding.unref();
    holding(commands).unref();
    return shell;
  }

  /** One line from the shell: `ID pid N`, `ID STATUS` or `ID nocwd`. */
  private answer(shell: Shell, line: string): void {
    const [idText, first, second] = line.split(" ");
    const id = Number(idText);
    const pending = this.pending.get(id);
    if (!pending) return;
    if (first === "pid") pending.pid = Number(second);
    else pending.status = first === "nocwd" ? null : Number(first);
    if (pending.pid === undefined || pending.status === undefined) return;
    // The job has ended: the shell reaps it, and the command's files are read.
    shell.commands.write(`wait ${String(pending.pid)}\n`);
    this.settle(id);
    if (pending.status === null) {
      shell.free.push(pending.slot);
      pending.reject(new Error("git could not be started: its working directory does not exist"));
      return;
    }
    const { files, status } = pending;
    // Small files in memory (or the page cache): reading them at once costs less than a round
    // through the thread pool.
    let stdout = "";
    try {
      stdout = readFileSync(`${files}.out`, "utf8");
      const stderr = readFileSync(`${files}.err`, "utf8");
      pending.resolve({ stdout, stderr, code: status });
    } catch (error) {
      pending.reject(
        new Error(`git's output could not be read: ${(error as Error).message}`, { cause: error }),
      );
    }
    // Large files are not kept in memory until their slot is used again.
    if (stdout.length > LARGE) rmSync(`${files}.out`, { force: true });
    if (pending.largeInput) rmSync(`${files}.in`, { force: true });
    shell.free.push(pending.slot);
  }

  private settle(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.shell?.holding.unref();
  }

  private gone(shell: Shell, error: Error): void {
    if (this.shell !== shell) return;
    this.shell = null;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(error);
    process.removeListener("exit", shell.removeScratch);
    shell.removeScratch();
  }
}
