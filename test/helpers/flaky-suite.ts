/**
 * A test suite for queue tests on real processes, as a repository's `check.sh`: two tests reported
 * in JUnit (`reports/junit.xml`, suite and class `widgets`). `content` fails when a text file says
 * BROKEN (a change can break main); `checkout` is flaky once `flaky.txt` is there: it fails the
 * first time a tree is tested (remembered under `$FLAKY_DIR`), and passes when the same tree is
 * tested again. The script exits non-zero when either failed.
 */
export const FLAKY_SUITE_CHECK = `#!/bin/sh
mkdir -p reports
content=pass
checkout=pass
grep -rq BROKEN --include='*.txt' . && content=fail
seen="$FLAKY_DIR/$(git rev-parse HEAD^{tree})"
if [ -e flaky.txt ] && [ ! -e "$seen" ]; then touch "$seen"; checkout=fail; fi
result() { [ "$1" = pass ] || echo '<failure message="it failed"/>'; }
{
  echo '<testsuite name="widgets">'
  echo "<testcase classname=\\"widgets\\" name=\\"content\\">$(result $content)</testcase>"
  echo "<testcase classname=\\"widgets\\" name=\\"checkout\\">$(result $checkout)</testcase>"
  echo '</testsuite>'
} > reports/junit.xml
[ $content = pass ] && [ $checkout = pass ]
`;
