/**
 * The failed-tests file a localization run's checks get (`MAINLINE_FAILED_TESTS_FILE`, written by
 * the built-in runner and by `mainline test`; docs/fail-first.md): one line per test that failed
 * in the batch run, tab-separated, no header, in the order of file, class and name:
 *
 *     id <TAB> classname.name <TAB> file <TAB> classname <TAB> name <TAB> suite
 *
 * `classname.name` is the name alone when the report gives no class name; `file` is relative to
 * the repository's root, empty when the report gives none. A tab or line break inside a field
 * becomes a space. An empty file: no failed test is known. Pure.
 */

/** A failed test as test health stores it (`FailedTestCase`). */
export interface FailedTestLine {
  id: string;
  name: string;
  classname: string;
  parent: string;
  file: string | null;
}

const field = (text: string | null): string => (text ?? "").replace(/[\t\r\n]+/g, " ");

/** `classname.name`, or the name alone when there is no class name. */
export function qualifiedTestName(test: Pick<FailedTestLine, "classname" | "name">): string {
  return test.classname === "" ? test.name : `${test.classname}.${test.name}`;
}

function compare(a: FailedTestLine, b: FailedTestLine): number {
  const keys = (t: FailedTestLine) => [t.file ?? "", t.classname, t.name, t.id];
  const [x, y] = [keys(a), keys(b)];
  for (let i = 0; i < x.length; i++) {
    const [p, q] = [x[i] ?? "", y[i] ?? ""];
    if (p !== q) return p < q ? -1 : 1;
  }
  return 0;
}

/** The file's text: a line per test (each ending in a line break), or "" for none. */
export function failedTestsFileText(tests: readonly FailedTestLine[]): string {
  return [...tests]
    .sort(compare)
    .map(
      (t) =>
        [t.id, qualifiedTestName(t), t.file, t.classname, t.name, t.parent].map(field).join("\t") +
        "\n",
    )
    .join("");
}
