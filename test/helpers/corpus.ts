/**
 * The third-party JUnit fixture corpus (../shared/fixtures/junit): where it is, its files, the
 * known-bad ones (the corpus README's lists) and the test-case counts of its MANIFESTs.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The local repository this checkout was cloned from, if it was cloned from a path. */
function originPath(): string | null {
  try {
    const url = execFileSync("git", ["config", "--get", "remote.origin.url"], {
      cwd: repoRoot,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    const local = url.startsWith("file://") ? fileURLToPath(url) : url;
    return path.isAbsolute(local) ? local : null;
  } catch {
    return null;
  }
}

/**
 * `shared/` sits beside the checkout (for developers and CI), or beside the local repository a
 * throwaway clone was made from; MAINLINE_SHARED_DIR overrides both.
 */
function findCorpus(): string {
  const override = process.env.MAINLINE_SHARED_DIR;
  const beside = (dir: string) => path.join(dir, "fixtures/junit");
  const besideCheckout = path.resolve(repoRoot, "../shared");
  const tried = [override ?? besideCheckout];
  if (!override && !existsSync(beside(besideCheckout))) {
    const origin = originPath();
    if (origin) tried.push(path.resolve(origin, "../shared"));
  }
  const found = tried.map(beside).find((dir) => existsSync(dir));
  if (found) return found;
  throw new Error(
    `The JUnit fixture corpus is not in ${tried.join(" or ")}: put shared/ beside the checkout or set MAINLINE_SHARED_DIR.`,
  );
}

export const corpusRoot = findCorpus();

/** Report files under `dir`, relative to the corpus root. */
export function reportFiles(dir: string = corpusRoot): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return reportFiles(full);
    return entry.name.endsWith(".md") ? [] : [path.relative(corpusRoot, full)];
  });
}

/** The corpus README's "Not well-formed" and "Well-formed but not JUnit" lists. */
export const KNOWN_BAD = [
  "enricomi-publish-unit-test-result-action/junit-xml/pytest/corrupt-xml.xml",
  "enricomi-publish-unit-test-result-action/xml/empty.xml",
  "enricomi-publish-unit-test-result-action/xml/non-xml.xml",
  "mikepenz-action-junit-report/corrupt-junit/e2e-tests/corrupt/target/sf-reports/TEST-test.CorruptTest.xml",
  "mikepenz-action-junit-report/junit-web-test/expected.xml",
  "mikepenz-action-junit-report/junit-web-test/expectedRetries.xml",
  "jenkinsci-junit-plugin/testXxe-xxe.xml",
  "launchableinc-cli/broken_xml/broken.xml",
  "launchableinc-cli/cucumber/report/dummy.xml",
  "datadog-datadog-ci/empty.xml",
  "enricomi-publish-unit-test-result-action/junit-xml/non-junit.xml",
  "allure-framework-allure2/invalid.xml",
  "launchableinc-cli/maven/reports/dummy.xml",
  "datadog-datadog-ci/invalid.xml",
];

/** "Testcases" column of each folder's MANIFEST.md (counted by the corpus builder, independently of us). */
export function manifestCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const folder of readdirSync(corpusRoot, { withFileTypes: true })) {
    if (!folder.isDirectory()) continue;
    const manifest = readFileSync(path.join(corpusRoot, folder.name, "MANIFEST.md"), "utf8");
    for (const row of manifest.split("\n")) {
      const file = /^\| `([^`]+)` \|/.exec(row)?.[1];
      const count = row.split(" | ")[6]?.trim();
      if (file !== undefined && count !== undefined && /^\d+$/.test(count)) {
        counts.set(path.join(folder.name, file), Number(count));
      }
    }
  }
  return counts;
}
