/**
 * The queue page's "Configuration" box: the mistakes in the target branch's `.mainline.yml` (a
 * local repository, whose CI is the built-in runner), each as `file:line: message`, read when the
 * page is rendered, so that a push that fixes the file takes the box away.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectLandmarks, inject, signIn, type SignedIn } from "../helpers/dashboard.js";
import { mainlineYml } from "../helpers/local-project.js";
import { createRepositoryAndQueue, type Call } from "../helpers/local-queue.js";
import { PROJECT_FILES, type LocalProject } from "../helpers/local-project.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const PAGE = "/acme/merge-queue/queue?repo=acme/shop&host=local&branch=main";

let server: TestServer;
let acme: SignedIn;
let project: LocalProject;

beforeAll(async () => {
  server = await startTestServer({ startWorker: false, engine: { pollMs: 100 } });
  const call: Call = (operation, body) => server.call(operation, body);
  // Requires `build`, which no check reports; and a check name to escape.
  project = await createRepositoryAndQueue(
    call,
    { state: "paused" },
    {
      ...PROJECT_FILES,
      ".mainline.yml": `merge:\n  required_statuses:\n    - build\n    - "<b>x</b>"\n${mainlineYml("sh test.sh")}`,
    },
  );
  acme = await signIn(server.app, server.token);
});

afterAll(async () => {
  await server.close();
});

/** The Configuration box's items, as text, or undefined when the page has no box. */
async function configurationBox(): Promise<string[] | undefined> {
  const page = await inject(server.app, { path: PAGE, cookie: acme.cookie });
  expect(page.status, page.body).toBe(200);
  expectLandmarks(page.body);
  const box = /<section class="notice config-problems"[^>]*>(.*?)<\/section>/s.exec(page.body);
  if (!box) return undefined;
  expect(box[1]).toContain('<h2 id="configuration">Configuration</h2>');
  expect(box[1]).toContain("config_parsing_failure");
  return [...(box[1] ?? "").matchAll(/<li><code>(.*?)<\/code><\/li>/gs)].map((m) => m[1] ?? "");
}

describe("the queue page's Configuration box", () => {
  it("lists the target branch's mistakes as file:line: message, until a push fixes them", async () => {
    expect(await configurationBox()).toEqual([
      ".mainline.yml:3: merge.required_statuses: &quot;build&quot; names no check in .mainline.yml, whose checks are &quot;test&quot;",
      ".mainline.yml:4: merge.required_statuses: &quot;&lt;b&gt;x&lt;/b&gt;&quot; names no check in .mainline.yml, whose checks are &quot;test&quot;",
    ]);
    await project.pushToMain({ ".mainline.yml": mainlineYml("sh test.sh") }, "Fix the config");
    expect(await configurationBox()).toBeUndefined();
    await project.pushToMain({ ".mainline.yml": "ci:\n  checks:\n    - name: test\n" }, "Break");
    expect(await configurationBox()).toEqual([
      ".mainline.yml:3: ci.checks[0] (&quot;test&quot;): missing &quot;run&quot;",
    ]);
  });
});
