import { createHash } from "node:crypto";
import { MemoryCi, MemoryGitHost } from "../../src/mergequeue/simulator/memory-host.js";
import { startTestServer, type TestServer } from "./server.js";

/** The in-memory git host, with pull requests opened the way a person opens them. */
export class InMemoryGitHost extends MemoryGitHost {
  private readonly numbers = new Map<string, number>();

  openPullRequest(pr: {
    host: string;
    owner: string;
    name: string;
    head: string;
    base: string;
    title: string;
    author: string;
  }): { number: number } {
    const repo = { host: pr.host, owner: pr.owner, name: pr.name };
    const key = `${pr.host}/${pr.owner}/${pr.name}`.toLowerCase();
    const number = (this.numbers.get(key) ?? 0) + 1;
    this.numbers.set(key, number);
    this.addPullRequest(repo, {
      number,
      title: pr.title,
      author: pr.author,
      headBranch: pr.head,
      headSha: createHash("sha1").update(`${key}#${number}:${pr.head}`).digest("hex"),
      baseBranch: pr.base,
    });
    return { number };
  }
}

/** A test server whose merge queues run against an in-memory git host the test opens PRs on. */
export async function startEngineServer(): Promise<{ server: TestServer; git: InMemoryGitHost }> {
  const git = new InMemoryGitHost();
  return {
    server: await startTestServer({ gitHost: git, ci: new MemoryCi(), startWorker: false }),
    git,
  };
}
