/**
 * submitPullRequest on a local repository (the built-in runner is its CI): the mistakes in the
 * configuration the pull request's run will use come back as the answer's `warnings`, with file
 * and line, before any run; the pull request is submitted all the same. What is checked is the
 * pull request merged into the target branch, as its run will test it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalProject, mainlineYml, PROJECT_FILES } from "../helpers/local-project.js";
import { ok, startTestServer, type TestServer } from "../helpers/server.js";

type Repo = { host: string; owner: string; name: string };

interface Warning {
  code: string;
  message: string;
  file?: string;
  line?: number;
  column?: number;
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ startWorker: false, engine: { pollMs: 100 } });
});

afterAll(async () => {
  await server.close();
});

/** `.mainline.yml` requiring `build`, with only the check `test`: `- build` is line 3. */
const REQUIRES_BUILD = `merge:\n  required_statuses:\n    - build\n${mainlineYml("sh test.sh")}`;

let repoCounter = 0;
/** A local repository with the project (and `files` over it) on main, and a paused queue. */
async function pausedQueue(files: Record<string, string> = {}) {
  const repo: Repo = { host: "local", owner: "acme", name: `config-${String(++repoCounter)}` };
  const { remoteUrl } = await ok(
    server.call<{ remoteUrl: string }>("local/createRepository", { repo }),
  );
  const project = await createLocalProject(remoteUrl, { ...PROJECT_FILES, ...files });
  const queue = { repo, targetBranch: "main" };
  await ok(server.call("createQueue", queue));
  // Paused: nothing runs; the warnings come from the submission alone.
  await ok(server.call("updateQueue", { ...queue, state: "paused" }));
  let prCounter = 0;
  /** Pushes a branch with `changes`, opens its pull request and submits it: the answer. */
  const submit = async (changes: Record<string, string>) => {
    const head = `change-${String(++prCounter)}`;
    await project.branch(head, changes);
    const { number } = await ok(
      server.call<{ number: number }>("local/openPullRequest", { repo, head, base: "main" }),
    );
    const answer = await ok(
      server.call<{ warnings?: Warning[] }>("submitPullRequest", { ...queue, pr: { number } }),
    );
    return { number, answer };
  };
  return { queue, submit };
}

describe("submitPullRequest's configuration warnings", () => {
  it("a required status that names no check: the warning names the file and the line of its item", async () => {
    const { queue, submit } = await pausedQueue();
    const { number, answer } = await submit({ ".mainline.yml": REQUIRES_BUILD });
    expect(answer.warnings?.[0]).toMatchObject({ code: "config_run_will_fail" });
    expect(answer.warnings?.[0]?.message).toContain("will fail the run of #1 at once");
    expect(answer.warnings?.slice(1)).toEqual([
      {
        code: "config_unknown_required_status",
        message:
          'merge.required_statuses: "build" names no check in .mainline.yml, whose checks are "test"',
        file: ".mainline.yml",
        line: 3,
        column: 7,
      },
    ]);
    // Submitted all the same: a push may fix the file.
    const submitted = await ok(
      server.call("getSubmittedPullRequest", { ...queue, pr: { number } }),
    );
    expect(submitted).toMatchObject({ prNumber: number, isCurrentlySubmittedToQueue: true });
  });

  it("a schema mistake and broken YAML are reported where they are", async () => {
    const { submit } = await pausedQueue();
    const unknownKey = await submit({
      ".mainline.yml": `${mainlineYml("sh test.sh")}  colour: blue\n`,
    });
    expect(unknownKey.answer.warnings?.slice(1)).toEqual([
      {
        code: "config_unknown_key",
        message: "ci.colour: unknown key",
        file: ".mainline.yml",
        line: 6,
        column: 3,
      },
    ]);
    const broken = await submit({ ".mainline.yml": "ci:\n  checks: [\n" });
    expect(broken.answer.warnings?.slice(1)).toMatchObject([
      { code: "config_invalid_yaml", file: ".mainline.yml", line: 3 },
    ]);
  });

  it("checks the pull request merged into the target branch: a fix in the pull request counts, and main's mistake does too", async () => {
    const { submit } = await pausedQueue({ ".mainline.yml": REQUIRES_BUILD });
    // Touches another file: main's .mainline.yml is what its run reads.
    const plain = await submit({ "numbers/a.txt": "2\n" });
    expect(plain.answer.warnings?.map((w) => w.code)).toEqual([
      "config_run_will_fail",
      "config_unknown_required_status",
    ]);
    // Fixes the file: nothing to say.
    const fix = await submit({ ".mainline.yml": mainlineYml("sh test.sh") });
    expect(fix.answer).toEqual({});
  });

  it("a sound configuration: Trunk's empty answer; the queue's own setting is checked too", async () => {
    const { queue, submit } = await pausedQueue();
    expect((await submit({ "numbers/b.txt": "3\n" })).answer).toEqual({});
    await ok(server.call("updateQueue", { ...queue, requiredStatuses: ["deploy"] }));
    const overridden = await submit({ "numbers/c.txt": "4\n" });
    expect(overridden.answer.warnings?.slice(1)).toEqual([
      {
        code: "config_unknown_required_status",
        message:
          'required status "deploy" (from the queue\'s settings) names no check in .mainline.yml, whose checks are "test"',
      },
    ]);
  });
});
