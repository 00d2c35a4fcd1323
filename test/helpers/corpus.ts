/**
 * The third-party JUnit fixture corpus (test/fixtures/junit, kept verbatim with the README and
 * MANIFESTs that record each file's source and license): its files, the known-bad ones (the
 * corpus README's lists) and the test-case counts of its MANIFESTs.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const corpusRoot = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../fixtures/junit",
);

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
