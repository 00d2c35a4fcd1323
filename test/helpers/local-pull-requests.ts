import type {
  LocalPullRequestRecord,
  LocalPullRequestRecords,
} from "../../src/mergequeue/local-pull-request-records.js";
import { type OwnedRepoRef } from "../../src/organizations/repositories.js";

const key = (repo: OwnedRepoRef) => `${repo.host}/${repo.owner}/${repo.name}`;

/**
 * The local host's pull-request records in memory, for tests of the host alone (integration
 * tests use the database store). `crash` simulates the process dying at a write, once: the
 * call throws, after storing the write (`stored: true`) or before it.
 */
export class MemoryLocalPullRequests implements LocalPullRequestRecords {
  private readonly records = new Map<string, LocalPullRequestRecord[]>();
  crash: { at: "markMerging" | "markMerged"; stored: boolean } | null = null;

  open(
    repo: OwnedRepoRef,
    pr: {
      headBranch: string;
      baseBranch?: string;
      title?: string;
      author?: string;
      description?: string;
    },
  ): LocalPullRequestRecord {
    const list = this.records.get(key(repo)) ?? [];
    const record: LocalPullRequestRecord = {
      repositoryId: key(repo),
      number: list.length + 1,
      headBranch: pr.headBranch,
      baseBranch: pr.baseBranch ?? "main",
      title: pr.title ?? `Change ${pr.headBranch}`,
      author: pr.author ?? "dev",
      description: pr.description ?? "",
      state: "open",
      mergingSha: null,
      mergedSha: null,
      createdAt: 0,
      closedAt: null,
    };
    list.push(record);
    this.records.set(key(repo), list);
    return record;
  }

  find(repo: OwnedRepoRef, number: number): Promise<LocalPullRequestRecord | undefined> {
    const found = this.records.get(key(repo))?.find((r) => r.number === number);
    return Promise.resolve(found ? { ...found } : undefined);
  }

  listOpen(repo: OwnedRepoRef): Promise<LocalPullRequestRecord[]> {
    const open = (this.records.get(key(repo)) ?? []).filter((r) => r.state === "open");
    return Promise.resolve(open.map((r) => ({ ...r })));
  }

  listMerged(repo: OwnedRepoRef): Promise<LocalPullRequestRecord[]> {
    const merged = (this.records.get(key(repo)) ?? []).filter((r) => r.state === "merged");
    return Promise.resolve(merged.map((r) => ({ ...r })));
  }

  markMerging(repo: OwnedRepoRef, number: number, sha: string): Promise<void> {
    return this.write("markMerging", () => {
      this.stored(repo, number).mergingSha = sha;
    });
  }

  markMerged(repo: OwnedRepoRef, number: number, sha: string, now: number): Promise<void> {
    return this.write("markMerged", () => {
      Object.assign(this.stored(repo, number), { state: "merged", mergedSha: sha, closedAt: now });
    });
  }

  private stored(repo: OwnedRepoRef, number: number): LocalPullRequestRecord {
    const found = this.records.get(key(repo))?.find((r) => r.number === number);
    if (!found) throw new Error(`no pull request #${String(number)}`);
    return found;
  }

  private write(step: "markMerging" | "markMerged", store: () => void): Promise<void> {
    const crash = this.crash?.at === step ? this.crash : null;
    if (!crash || crash.stored) store();
    if (!crash) return Promise.resolve();
    this.crash = null;
    return Promise.reject(new Error(`simulated crash at ${step}`));
  }
}
