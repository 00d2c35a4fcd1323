/**
 * The merge queue's pages and forms (docs/dashboard.md): a queue, a pull request, a queue's
 * health, a check's log, and the live stream of a queue's changes (Server-Sent Events, ADR 0025).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type, type Static } from "typebox";
import type { ConfigCheckService } from "../mergequeue/config-check.js";
import type { QueueDashboardService } from "../mergequeue/dashboard.js";
import { actorOf, type PullRequestService } from "../mergequeue/pull-request-service.js";
import type { MergeQueueService, QueueAddress } from "../mergequeue/queue-service.js";
import type { Principal } from "../organizations/service.js";
import { queueName } from "./format.js";
import { markup, pathWithQuery, segment } from "./html.js";
import { QueueWatch } from "./live.js";
import {
  renderPullRequest,
  renderQueue,
  renderQueueHealth,
  type QueueLinks,
  type QueuePlace,
} from "./pages/merge-queue.js";
import { PAGE_HEADERS, redirect } from "./respond.js";
import type { Web } from "./toolkit.js";
import { DEFAULT_HOST, repoQuery, urls } from "./urls.js";

/** What the merge queue's pages call. */
export interface MergeQueuePageDependencies {
  dashboard: Pick<QueueDashboardService, "queue" | "board" | "pullRequest" | "health" | "version">;
  queues: Pick<MergeQueueService, "update">;
  pullRequests: Pick<PullRequestService, "restart" | "cancel" | "submit">;
  /** The configuration check of the queue's target branch (the queue page's box). */
  configuration?: Pick<ConfigCheckService, "targetBranch"> | undefined;
  /** A check's log of the built-in CI runner (repositories on the local git host). */
  ciLog?:
    | ((
        principal: Principal,
        address: QueueAddress,
        runId: string,
        check: string,
      ) => Promise<string>)
    | undefined;
  /** The host whose checks' logs `ciLog` reads (`local`). */
  ciLogHost?: string | undefined;
  /** How often a followed queue's version is read (default 1000 ms). */
  livePollMs?: number | undefined;
  /** How long one event stream lasts before the browser reconnects (default 10 min). */
  liveStreamMs?: number | undefined;
}

const OrgParams = Type.Object({ org: Type.String({ maxLength: 63 }) });
const PrParams = Type.Object({
  org: Type.String({ maxLength: 63 }),
  number: Type.String({ pattern: "^[1-9][0-9]{0,8}$" }),
});
const QueueQuery = Type.Object({
  repo: Type.String({ maxLength: 600 }),
  host: Type.Optional(Type.String({ maxLength: 255 })),
  branch: Type.String({ minLength: 1, maxLength: 255 }),
  view: Type.Optional(Type.Union([Type.Literal("graph"), Type.Literal("list")])),
});
const HealthQuery = Type.Object({
  ...QueueQuery.properties,
  range: Type.Optional(Type.Union([Type.Literal("7d"), Type.Literal("30d"), Type.Literal("90d")])),
});
const LogQuery = Type.Object({
  ...QueueQuery.properties,
  run: Type.String({ minLength: 1, maxLength: 200 }),
  check: Type.String({ minLength: 1, maxLength: 255 }),
});
type QueueQueryT = Static<typeof QueueQuery>;

/** The queue a query names, or undefined when `repo` is not `owner/name`. */
function placeOf(org: string, query: QueueQueryT): QueuePlace | undefined {
  const at = query.repo.lastIndexOf("/");
  if (at <= 0 || at === query.repo.length - 1) return undefined;
  const repo = {
    host: query.host ?? DEFAULT_HOST,
    owner: query.repo.slice(0, at),
    name: query.repo.slice(at + 1),
  };
  return { org, repo, branch: query.branch };
}

const addressOf = (place: QueuePlace): QueueAddress => ({
  repo: place.repo,
  targetBranch: place.branch,
});

function linksOf(place: QueuePlace, deps: MergeQueuePageDependencies): QueueLinks {
  const base = `/${segment(place.org)}/merge-queue`;
  const query = { ...repoQuery(place.repo), branch: place.branch };
  const logs =
    deps.ciLog !== undefined &&
    place.repo.host.toLowerCase() === (deps.ciLogHost ?? "local").toLowerCase();
  return {
    queue: urls.queue(place.org, place.repo, place.branch),
    health: urls.queueHealth(place.org, place.repo, place.branch),
    events: pathWithQuery(`${base}/events`, query),
    stateAction: pathWithQuery(`${base}/queue/state`, query),
    pullRequest: (n) => urls.pullRequest(place.org, place.repo, place.branch, n),
    pullRequestAction: (n, action) => pathWithQuery(`${base}/pr/${n}/${action}`, query),
    log: (run, check) =>
      logs ? pathWithQuery(`${base}/log`, { ...query, run, check }) : undefined,
  };
}

const WHICH_QUEUE = {
  status: 400,
  view: {
    title: "Which queue?",
    section: "queues" as const,
    main: markup`<h1>Which queue?</h1><p>Name the queue with ?repo=owner/name&amp;branch=main.</p>`,
  },
};

export function registerMergeQueuePages(web: Web, deps: MergeQueuePageDependencies): void {
  const watch = new QueueWatch((id) => deps.dashboard.version(id), deps.livePollMs ?? 1000);
  const streams = new Set<() => void>();
  web.app.addHook("preClose", (done) => {
    for (const end of [...streams]) end();
    watch.stop();
    done();
  });
  registerQueuePage(web, deps);
  registerQueueStateAction(web, deps);
  registerPullRequestPage(web, deps);
  registerPullRequestActions(web, deps);
  registerQueueHealthPage(web, deps);
  registerCheckLogPage(web, deps);
  registerQueueEvents(web, deps, { watch, streams });
}

/** A queue: its pull requests, runs and state. */
function registerQueuePage(web: Web, deps: MergeQueuePageDependencies): void {
  web.page(
    "/:org/merge-queue/queue",
    { params: OrgParams, querystring: QueueQuery },
    async (request, context) => {
      const place = placeOf(context.org, request.query);
      if (!place) return WHICH_QUEUE;
      const { principal } = context.viewer;
      const [board, config] = await Promise.all([
        deps.dashboard.board(principal, addressOf(place)),
        deps.configuration?.targetBranch(principal, addressOf(place)),
      ]);
      const links = linksOf(place, deps);
      return {
        view: renderQueue(board, place, links, context.viewer.csrf, context.now, config),
      };
    },
  );
}

/** The queue's state form: running, paused or draining. */
function registerQueueStateAction(web: Web, deps: MergeQueuePageDependencies): void {
  web.action(
    "/:org/merge-queue/queue/state",
    {
      params: OrgParams,
      querystring: QueueQuery,
      body: Type.Object({
        state: Type.Union([
          Type.Literal("running"),
          Type.Literal("paused"),
          Type.Literal("draining"),
        ]),
      }),
    },
    async (request, context) => {
      const place = placeOf(context.org, request.query);
      if (!place) return WHICH_QUEUE;
      await deps.queues.update(context.viewer.principal, addressOf(place), {
        state: request.body.state,
      });
      return { redirect: urls.queue(place.org, place.repo, place.branch) };
    },
  );
}

/** A pull request in the queue: its history. */
function registerPullRequestPage(web: Web, deps: MergeQueuePageDependencies): void {
  web.page(
    "/:org/merge-queue/pr/:number",
    { params: PrParams, querystring: QueueQuery },
    async (request, context) => {
      const place = placeOf(context.org, request.query);
      if (!place) return WHICH_QUEUE;
      const history = await deps.dashboard.pullRequest(
        context.viewer.principal,
        addressOf(place),
        Number(request.params.number),
      );
      return {
        view: renderPullRequest(
          history,
          place,
          linksOf(place, deps),
          context.viewer.csrf,
          context.now,
        ),
      };
    },
  );
}

/** A pull request's forms: restart, cancel, change its priority. */
function registerPullRequestActions(web: Web, deps: MergeQueuePageDependencies): void {
  for (const action of ["restart", "cancel", "priority"] as const) {
    web.action(
      `/:org/merge-queue/pr/:number/${action}`,
      {
        params: PrParams,
        querystring: QueueQuery,
        body: Type.Object({
          priority: Type.Optional(
            Type.Union([
              Type.Literal("urgent"),
              Type.Literal("high"),
              Type.Literal("medium"),
              Type.Literal("low"),
            ]),
          ),
        }),
      },
      async (request, context) => {
        const place = placeOf(context.org, request.query);
        if (!place) return WHICH_QUEUE;
        const { principal } = context.viewer;
        const address = addressOf(place);
        const prNumber = Number(request.params.number);
        if (action === "restart") {
          await deps.pullRequests.restart(principal, address, prNumber, actorOf(principal));
        } else if (action === "cancel") {
          await deps.pullRequests.cancel(principal, address, prNumber, actorOf(principal));
        } else {
          if (request.body.priority === undefined) {
            return {
              status: 400,
              view: {
                title: "Which priority?",
                main: markup`<h1>Which priority?</h1><p>Choose urgent, high, medium or low. Nothing was changed.</p>`,
              },
            };
          }
          await deps.pullRequests.submit(
            principal,
            address,
            { prNumber, priority: request.body.priority },
            actorOf(principal),
          );
        }
        return { redirect: urls.pullRequest(place.org, place.repo, place.branch, prNumber) };
      },
    );
  }
}

/** A queue's health over a range of days. */
function registerQueueHealthPage(web: Web, deps: MergeQueuePageDependencies): void {
  web.page(
    "/:org/merge-queue/health",
    { params: OrgParams, querystring: HealthQuery },
    async (request, context) => {
      const place = placeOf(context.org, request.query);
      if (!place) return WHICH_QUEUE;
      const range = request.query.range ?? "30d";
      const health = await deps.dashboard.health(context.viewer.principal, addressOf(place), range);
      const ranges = (["7d", "30d", "90d"] as const).map((r) => ({
        range: r,
        href: urls.queueHealth(place.org, place.repo, place.branch, r),
        current: r === range,
      }));
      return {
        view: renderQueueHealth(health, place, linksOf(place, deps), ranges, context.now),
      };
    },
  );
}

/** A check's log, from the built-in CI runner. */
function registerCheckLogPage(web: Web, deps: MergeQueuePageDependencies): void {
  web.page(
    "/:org/merge-queue/log",
    { params: OrgParams, querystring: LogQuery },
    async (request, context) => {
      const place = placeOf(context.org, request.query);
      if (!place) return WHICH_QUEUE;
      const links = linksOf(place, deps);
      const { run, check } = request.query;
      if (!deps.ciLog || links.log(run, check) === undefined) return { notFound: true };
      const log = await deps.ciLog(context.viewer.principal, addressOf(place), run, check);
      const title = `${check} · run ${run}`;
      return {
        view: {
          title: `Log of ${title}`,
          section: "queues",
          breadcrumbs: [
            { label: "Merge queues", href: urls.queues(place.org) },
            {
              label: queueName(place.repo, place.branch),
              href: links.queue,
            },
            { label: title },
          ],
          main: markup`<h1>Log of ${check} <span class="muted">run ${run}</span></h1>
<pre class="log" tabindex="0">${log}</pre>`,
        },
      };
    },
  );
}

function registerQueueEvents(
  web: Web,
  deps: MergeQueuePageDependencies,
  live: {
    /** Reads each followed queue's version. */
    watch: QueueWatch;
    /** How to end each open stream (when the server closes). */
    streams: Set<() => void>;
  },
): void {
  const { watch, streams } = live;
  // The live stream of a queue (ADR 0025): `event: change` whenever its version changes.
  web.app.get(
    "/:org/merge-queue/events",
    { schema: { hide: true, params: OrgParams, querystring: QueueQuery } },
    async (
      request: FastifyRequest<{ Params: Static<typeof OrgParams>; Querystring: QueueQueryT }>,
      reply: FastifyReply,
    ) => {
      const viewer = await web.viewer(request, true);
      if (!viewer) {
        return reply
          .code(401)
          .headers(PAGE_HEADERS)
          .type("text/plain; charset=utf-8")
          .send("Signed out.");
      }
      request.webViewer = viewer;
      if (request.params.org !== viewer.principal.organizationSlug) {
        return web.notFound(reply, viewer);
      }
      const place = placeOf(request.params.org, request.query);
      if (!place) return redirect(reply, urls.queues(request.params.org));
      // A 404 (not this organization's queue) becomes the one 404 page.
      const queue = await deps.dashboard.queue(viewer.principal, addressOf(place));
      const version = (await deps.dashboard.version(queue.id)) ?? "";
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        ...PAGE_HEADERS,
        "content-type": "text/event-stream; charset=utf-8",
        // The stream holds its connection for its whole life; once it ends (its lifetime, the
        // queue gone, the server stopping) the connection ends too, rather than idling.
        connection: "close",
        "x-accel-buffering": "no",
      });
      raw.write(`retry: 2000\nevent: ready\ndata: ${version}\n\n`);
      let ended = false;
      const end = () => {
        if (ended) return;
        ended = true;
        unsubscribe();
        clearInterval(heartbeat);
        clearTimeout(lifetime);
        streams.delete(end);
        raw.end();
      };
      const unsubscribe = watch.subscribe(queue.id, version, (next) => {
        if (next === undefined) {
          raw.write("event: gone\ndata: \n\n");
          end();
          return;
        }
        raw.write(`event: change\ndata: ${next}\n\n`);
      });
      const heartbeat = setInterval(() => raw.write(": still here\n\n"), 15_000);
      // The browser reconnects after this, so the session is checked again now and then.
      const lifetime = setTimeout(end, deps.liveStreamMs ?? 10 * 60_000);
      streams.add(end);
      raw.on("close", end);
      raw.on("error", end);
    },
  );
}
