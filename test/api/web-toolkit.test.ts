import Fastify from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServices, type Services } from "../../src/app.js";
import { ApiError } from "../../src/lib/errors.js";
import { AssetCatalog } from "../../src/web/assets/catalog.js";
import { markup } from "../../src/web/html.js";
import { webScope } from "../../src/web/toolkit.js";
import type { WebApp } from "../../src/web/types.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { expectLandmarks, expectPageHeaders, inject } from "../helpers/dashboard.js";

/**
 * The toolkit the dashboard's pages are made with, on a bare server with one page and one form
 * that changes something (a counter): pages need a viewer and the viewer's organization; a form
 * changes the counter only from this site, with a live session and its anti-forgery token; a
 * service's 404 is the one 404 page.
 */

let database: TestDatabase;
let services: Services;
let app: WebApp;
let counter = 0;
let acme: { cookie: string; csrf: string };
let globexCookie: string;

const Form = Type.Object({ by: Type.String({ pattern: "^[0-9]{1,3}$" }) });

beforeAll(async () => {
  database = await createTestDatabase();
  services = createServices(database.handle);
  app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  await app.register((scope: WebApp, _options, done) => {
    const web = webScope(scope, {
      sessions: services.sessions,
      authenticate: (token) => services.organizations.authenticate(token),
      publicUrl: undefined,
      clock: services.clock,
      assets: () => Promise.resolve(new AssetCatalog([])),
    });
    web.page(
      "/:org/counter",
      { params: Type.Object({ org: Type.String() }) },
      async (_r, context) =>
        Promise.resolve({
          view: {
            title: "Counter",
            main: markup`<h1>Counter</h1><p id="value">${counter}</p><form method="post" action="/${context.org}/counter"><input type="hidden" name="csrf" value="${context.viewer.csrf ?? ""}"><input name="by" value="1"><button>Add</button></form>`,
          },
        }),
    );
    web.page("/:org/missing", { params: Type.Object({ org: Type.String() }) }, () => {
      throw new ApiError("not_found", "No such queue.");
    });
    web.action(
      "/:org/counter",
      { params: Type.Object({ org: Type.String() }), body: Form },
      async (request, context) => {
        counter += Number(request.body.by);
        return Promise.resolve({ redirect: `/${context.org}/counter` });
      },
    );
    done();
  });
  await app.ready();
  const signInAs = async (slug: string) => {
    const { token } = await services.organizations.createOrganizationWithToken(slug);
    const { sessionId } = await services.sessions.signIn(token);
    return {
      cookie: `mainline_session=${sessionId}`,
      csrf: services.sessions.csrfToken(sessionId),
    };
  };
  acme = await signInAs("acme");
  globexCookie = (await signInAs("globex")).cookie;
});

afterAll(async () => {
  await app.close();
  await database.cleanup();
});

const api = () => app;
const post = (
  form: Record<string, string>,
  cookie?: string,
  headers: Record<string, string> = {},
  org = "acme",
) => inject(api(), { method: "POST", path: `/${org}/counter`, cookie, form, headers });

describe("the page toolkit", () => {
  it("renders a page in the layout for its organization's session, 404 for another's", async () => {
    const page = await inject(api(), { path: "/acme/counter", cookie: acme.cookie });
    expect(page.status).toBe(200);
    expectPageHeaders(page);
    expectLandmarks(page.body);
    expect(page.body).toContain(`name="csrf" value="${acme.csrf}"`);
    expect((await inject(api(), { path: "/acme/counter", cookie: globexCookie })).status).toBe(404);
    const away = await inject(api(), { path: "/acme/counter" });
    expect(away.status).toBe(303);
    expect(away.headers.location).toBe("/sign-in?next=/acme/counter");
  });

  it("changes something only for a form of this site with the session's token", async () => {
    const before = counter;
    const refused: [Record<string, string>, string | undefined, Record<string, string>, string][] =
      [
        [{ by: "5" }, acme.cookie, {}, "acme"],
        [{ by: "5", csrf: "x".repeat(43) }, acme.cookie, {}, "acme"],
        [{ by: "5", csrf: acme.csrf }, acme.cookie, { origin: "https://evil.example" }, "acme"],
        [{ by: "5", csrf: acme.csrf }, acme.cookie, { "sec-fetch-site": "same-site" }, "acme"],
        [{ by: "5", csrf: acme.csrf }, undefined, {}, "acme"],
        [{ by: "5", csrf: acme.csrf }, globexCookie, {}, "acme"],
      ];
    const statuses = [];
    for (const [form, cookie, headers, org] of refused) {
      statuses.push((await post(form, cookie, headers, org)).status);
    }
    expect(statuses).toEqual([403, 403, 403, 403, 401, 403]);
    expect(counter).toBe(before);
    // Its own organization's form, with another organization's path: the one 404.
    const elsewhere = await post({ by: "5", csrf: acme.csrf }, acme.cookie, {}, "globex");
    expect(elsewhere.status).toBe(404);
    expect(counter).toBe(before);
    // A bad field is a 400 page, after the checks.
    expect((await post({ by: "many", csrf: acme.csrf }, acme.cookie)).status).toBe(400);
    const done = await post({ by: "2", csrf: acme.csrf }, acme.cookie, {
      "sec-fetch-site": "same-origin",
      origin: "null",
    });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe("/acme/counter");
    expect(counter).toBe(before + 2);
  });

  it("turns a service's 404 into the one 404 page", async () => {
    const missing = await inject(api(), { path: "/acme/missing", cookie: acme.cookie });
    expect(missing.status).toBe(404);
    expectPageHeaders(missing);
    const other = await inject(api(), { path: "/acme/counter", cookie: globexCookie });
    expect(missing.body).toBe(
      other.body
        .replace(/globex/g, "acme")
        .replace(/name="csrf" value="[^"]+"/, `name="csrf" value="${acme.csrf}"`),
    );
  });
});
