/**
 * Moves local repositories from the old layout, `{dataDir}/git/{owner}/{name}.git`, into the tree
 * of the organization whose repository row of that name is the oldest. Runs at startup, after the
 * migrations, before anything reads the repositories; moves are renames, safe from two processes at
 * once (an owner never ends with `.git`, so the layouts cannot be confused).
 */
import { mkdir, readdir, rename, rmdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { RepoRef } from "../../../organizations/repositories.js";
import { LOCAL_HOST, repositoryPath, type LocalRepositoryAddress } from "./layout.js";

export interface LayoutUpgradeDeps {
  /** The organization's repository that the old directory `{owner}/{name}.git` belonged to. */
  owner(ref: RepoRef): Promise<LocalRepositoryAddress | undefined>;
  logger: { info(message: string): void; error(message: string): void };
}

export interface LayoutUpgradeReport {
  /** `{owner}/{name}` → the new path. */
  moved: Map<string, string>;
  /** Old directories left where they are, with the reason. */
  left: Map<string, string>;
}

async function isBareRepository(dir: string): Promise<boolean> {
  try {
    return (await stat(join(dir, "HEAD"))).isFile();
  } catch {
    return false;
  }
}

async function directories(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith(".")).map((e) => e.name);
  } catch {
    return [];
  }
}

export async function upgradeLocalRepositoryLayout(
  dataDir: string,
  deps: LayoutUpgradeDeps,
): Promise<LayoutUpgradeReport> {
  const report: LayoutUpgradeReport = { moved: new Map(), left: new Map() };
  const root = join(dataDir, "git");
  for (const owner of await directories(root)) {
    let emptied = false;
    for (const entry of await directories(join(root, owner))) {
      if (!entry.endsWith(".git")) continue;
      const old = join(root, owner, entry);
      if (!(await isBareRepository(old))) continue;
      const name = entry.slice(0, -".git".length);
      const key = `${owner}/${name}`;
      const repository = await deps.owner({ host: LOCAL_HOST, owner, name });
      if (!repository) {
        report.left.set(key, "no organization has a repository of this name");
        deps.logger.error(`local repository ${key}: no organization has it; left at ${old}`);
        continue;
      }
      let target: string;
      try {
        target = repositoryPath(dataDir, repository);
      } catch (error) {
        report.left.set(key, String(error));
        deps.logger.error(`local repository ${key}: ${String(error)}; left at ${old}`);
        continue;
      }
      if (await isBareRepository(target)) {
        report.left.set(key, `${target} exists already`);
        deps.logger.error(`local repository ${key}: ${target} exists already; left at ${old}`);
        continue;
      }
      await mkdir(dirname(target), { recursive: true });
      try {
        await rename(old, target);
      } catch (error) {
        // Another process starting at the same time moved it first.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw error;
      }
      report.moved.set(key, target);
      emptied = true;
      deps.logger.info(`local repository ${key} moved to ${target}`);
    }
    if (emptied) await rmdir(join(root, owner)).catch(() => undefined);
  }
  return report;
}
