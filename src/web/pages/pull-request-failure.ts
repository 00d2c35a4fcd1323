/**
 * "Why did my pull request fail?" on its page, without a click: the reason, the failing checks,
 * the failing tests with whose red each is, and the end of the failing check's log.
 */
import type { PullRequestFailure } from "../../mergequeue/failure-explanation.js";
import type { FailureVerdict } from "../../testhealth/failure-verdicts.js";
import { VERDICT_WORDS } from "../../testhealth/failure-verdicts.js";
import { badge, muted, plural } from "../format.js";
import { markup, type SafeHtml } from "../html.js";

export interface FailureLinks {
  /** A test's page. */
  test: (testId: string) => string;
  /** A check's whole log (the built-in CI's); undefined when the host keeps none here. */
  log: (runId: string, check: string) => string | undefined;
}

/** The badge of each verdict: the red that is most likely the pull request's own reads as failed. */
const VERDICT_BADGES: Record<FailureVerdict, [kind: string, text: string]> = {
  failing: ["failed", "fails here"],
  new: ["failed", "new"],
  broken: ["broken", "broken on main"],
  flaky: ["flaky", "known flaky"],
  quarantined: ["quarantined", "quarantined"],
};

/** One sentence on the tests as a whole: is the red the pull request's? */
function testsVerdict(failure: PullRequestFailure): string {
  const mine = failure.tests.filter((t) => t.verdict === "failing" || t.verdict === "new");
  const known = failure.tests.filter((t) => t.verdict === "flaky" || t.verdict === "quarantined");
  const broken = failure.tests.filter((t) => t.verdict === "broken");
  if (mine.length > 0) {
    return `${plural(mine.length, "test")} failed that ${mine.length === 1 ? "is" : "are"} not known flaky or broken: most likely this pull request's.`;
  }
  if (broken.length > 0 && known.length + broken.length === failure.tests.length) {
    return "Only tests that are broken on the stable branch too failed: not this pull request's doing.";
  }
  return "Only known flaky tests failed: most likely not this pull request's doing. Restart its tests.";
}

function testList(failure: PullRequestFailure, links: FailureLinks): SafeHtml {
  if (failure.tests.length === 0) {
    if (failure.testsPending) return muted("Its test results are still being processed.");
    if (failure.runId === null) return markup``;
    return muted(
      failure.uploads === 0
        ? "No test results were uploaded for the run, so no failing test can be named."
        : "The uploaded test results name no failing test: the check failed outside its tests.",
    );
  }
  const items = failure.tests.map((test) => {
    const [kind, text] = VERDICT_BADGES[test.verdict];
    const parts = [test.parent, test.classname].filter((part) => part !== "");
    const where = [...new Set(parts)].join(" › ");
    return markup`<li><a href="${links.test(test.id)}">${test.name}</a> ${badge(kind, text)} <span class="visually-hidden">(${VERDICT_WORDS[test.verdict]})</span>${where || test.file ? markup`<br><span class="muted">${where}${test.file ? markup`${where ? " · " : ""}<code>${test.file}</code>` : ""}</span>` : ""}${test.summary ? markup`<br><span class="detail">${test.summary}</span>` : ""}</li>`;
  });
  const more = failure.testsTruncated
    ? markup`<p class="muted">More tests failed than are listed.</p>`
    : "";
  const pending = failure.testsPending
    ? markup`<p class="muted">More test results are still being processed.</p>`
    : "";
  return markup`<p>${testsVerdict(failure)}</p>
<ul class="failing-tests">${items}</ul>${more}${pending}`;
}

/** The "Why it failed" section of a failed pull request's page. */
export function failureSection(failure: PullRequestFailure, links: FailureLinks): SafeHtml {
  const run = failure.runId;
  const checks =
    failure.failedChecks.length === 0
      ? ""
      : markup`<p>Failing ${failure.failedChecks.length === 1 ? "check" : "checks"}: ${failure.failedChecks.map(
          (check, index) => {
            const href = check.url ?? (run === null ? undefined : links.log(run, check.name));
            return markup`${index > 0 ? ", " : ""}<strong>${check.name}</strong> (${check.conclusion})${href ? markup` · <a href="${href}">log</a>` : ""}`;
          },
        )}</p>`;
  const logHref = failure.log && run !== null ? links.log(run, failure.log.check) : undefined;
  const log = failure.log
    ? markup`<h3>End of the log of ${failure.log.check}</h3>
<pre class="log excerpt" tabindex="0" aria-label="The last ${failure.log.lines.length} lines of the log of ${failure.log.check}">${failure.log.lines.join("\n")}</pre>${logHref ? markup`<p><a href="${logHref}">The whole log</a></p>` : ""}`
    : "";
  const tests =
    failure.runId === null ? "" : markup`<h3>Failing tests</h3>${testList(failure, links)}`;
  return markup`<section class="why" aria-labelledby="why-h"><h2 id="why-h">Why it failed</h2>
<p class="error"><strong>${failure.message}</strong>${failure.detail ? markup` <span class="detail">${failure.detail}</span>` : ""}${run !== null ? markup` (<a href="#run-${run}">run ${run}</a>)` : ""}</p>
${checks}${tests}${log}</section>`;
}
