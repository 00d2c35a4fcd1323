/**
 * Starts git from a small helper process (no application code: its source is the string below) over
 * Node's IPC channel, because forking the server itself blocks its event loop for tens of
 * milliseconds. The shared environment is sent once, at the helper's start. If the helper dies, its
 * running commands fail and the next one starts a new helper.
 */
import { spawn, type ChildProcess } from "node:child_process";

/** What `runGit` asks for: always `git`, an argument list, never a shell. */
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
  /** Null when the process was killed by a signal. */
  code: number | null;
  signal: string | null;
}

/** The helper's program (CommonJS, run by `node -e`): spawn git, collect its output, answer. */
const HELPER_SOURCE = `
const { spawn } = require("node:child_process");
let shared = {};
process.on("message", (m) => {
  if (m.shared) {
    shared = m.shared;
    return;
  }
  let child;
  try {
    const env = { ...shared, ...m.env };
    child = spawn("git", m.args, { cwd: m.cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  } catch (error) {
    process.send({ id: m.id, error: String(error && error.message) });
    return;
  }
  const out = [];
  const err = [];
  let failed = null;
  child.stdout.on("data", (c) => out.push(c));
  child.stderr.on("data", (c) => err.push(c));
  child.on("error", (error) => { failed = String(error && error.message); });
  child.on("close", (code, signal) => {
    if (failed !== null && code === null && signal === null) {
      process.send({ id: m.id, error: failed });
      return;
    }
    process.send({
      id: m.id,
      stdout: Buffer.concat(out).toString("utf8"),
      stderr: Buffer.concat(err).toString("utf8"),
      code,
      signal,
    });
  });
  child.stdin.on("error", () => undefined);
  child.stdin.end(m.input);
});
process.on("disconnect", () => process.exit(0));
`;

type Answer = ({ error: string } | SpawnOutcome) & { id: number };

interface Pending {
  resolve: (outcome: SpawnOutcome) => void;
  reject: (error: Error) => void;
}

export class GitSpawner {
  /**
   * `sharedEnv` gives the environment every command starts from; it is read each time a helper
   * starts (so a change to it reaches the commands after the next helper start, not before).
   */
  constructor(private readonly sharedEnv: () => NodeJS.ProcessEnv = () => ({})) {}

  private helper: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  run(request: SpawnRequest): Promise<SpawnOutcome> {
    const helper = this.helper ?? this.start();
    const id = this.nextId++;
    return new Promise<SpawnOutcome>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // While commands run, the helper keeps this process alive (a CLI waiting for git).
      if (this.pending.size === 1) helper.channel?.ref();
      helper.send({ id, ...request }, (error) => {
        if (error) {
          this.settle(id, (p) => {
            p.reject(error);
          });
        }
      });
    });
  }

  /** Stops the helper (commands still running fail); the next command starts a new one. */
  stop(): void {
    const helper = this.helper;
    if (!helper) return;
    this.helper = null;
    this.failAll(helper, new Error("the git helper process was stopped"));
    helper.kill();
  }

  /** The helper's process id, or null when none runs. */
  get pid(): number | null {
    return this.helper?.pid ?? null;
  }

  private start(): ChildProcess {
    const helper = spawn(process.execPath, ["-e", HELPER_SOURCE], {
      // Not the server's flags or NODE_OPTIONS (e.g. tsx): the helper runs no application code.
      env: { PATH: process.env.PATH ?? "" },
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      serialization: "advanced",
    });
    this.helper = helper;
    // Sent first, so it arrives before any command (the channel keeps the order).
    helper.send({ shared: this.sharedEnv() });
    helper.on("message", (message: Answer) => {
      this.settle(message.id, (p) => {
        if ("error" in message) p.reject(new Error(`git could not be started: ${message.error}`));
        else {
          const { stdout, stderr, code, signal } = message;
          p.resolve({ stdout, stderr, code, signal });
        }
      });
    });
    const gone = (why: string) => {
      if (this.helper === helper) this.helper = null;
      this.failAll(helper, new Error(`the git helper process ${why}`));
    };
    helper.on("exit", (code, signal) => {
      gone(`exited (${signal ?? String(code)})`);
    });
    helper.on("error", (error) => {
      gone(`failed: ${error.message}`);
    });
    // Idle, the helper does not keep this process alive.
    helper.unref();
    helper.channel?.unref();
    return helper;
  }

  private settle(id: number, how: (pending: Pending) => void): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.helper?.channel?.unref();
    how(pending);
  }

  private failAll(helper: ChildProcess, error: Error): void {
    if (this.helper !== null && this.helper !== helper) return;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(error);
  }
}
