import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The fake's HTTP layer: routing on GitHub's path templates, GitHub's error bodies, and the headers
 * Octokit and its plugins read (`date`, `x-github-request-id`, `x-ratelimit-*`, `link`, `etag`,
 * `retry-after`). What a route does lives in the area modules; this file knows none of them.
 */

export const DOCS = "https://docs.github.com/rest";

/** The credential a request carried, as the fake judged it. */
export type Credential =
  | { kind: "none" }
  | { kind: "app"; appId: number }
  | {
      kind: "installation";
      installationId: number;
      appId: number;
      token: string;
      createdAtMs: number;
    }
  | { kind: "user"; login: string }
  /** A token or JWT the fake refused: unknown, expired, malformed, or a JWT with bad claims. */
  | { kind: "rejected"; reason: "unknown" | "expired" | "malformed" | "jwt"; message: string };

export type AuthRequirement = "app" | "installation" | "user" | "token" | "none";

export interface FakeResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A body sent as is (raw media types); `body` is ignored then. */
  raw?: { contentType: string; text: string };
}

export interface RequestContext {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  params: Record<string, string>;
  body: Record<string, unknown>;
  credential: Credential;
  route: Route;
  requestId: string;
}

export interface Route {
  method: string;
  /** GitHub's template; `{name+}` takes the rest of the path, slashes included. */
  path: string;
  operationId: string;
  auth: AuthRequirement;
  handler: (ctx: RequestContext) => Promise<FakeResponse> | FakeResponse;
}

/** An error answered the way GitHub answers it: `{message, documentation_url, status}`. */
export class GitHubError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toResponse(documentationUrl: string): FakeResponse {
    return {
      status: this.status,
      body: {
        message: this.message,
        documentation_url: documentationUrl,
        ...this.extra,
        status: String(this.status),
      },
      headers: this.headers,
    };
  }
}

export const notFound = (): GitHubError => new GitHubError(404, "Not Found");
export const badCredentials = (): GitHubError => new GitHubError(401, "Bad credentials");
export const notAccessible = (): GitHubError =>
  new GitHubError(403, "Resource not accessible by integration");

/** 422 "Validation Failed" with GitHub's `errors[]`, or a plain 422 message. */
export function validationFailed(
  message: string,
  errors?: { resource: string; field?: string; code: string; message?: string }[],
): GitHubError {
  return errors === undefined
    ? new GitHubError(422, message)
    : new GitHubError(422, message, { errors });
}

export function requireString(
  body: Record<string, unknown>,
  field: string,
  resource: string,
): string {
  const value = body[field];
  if (typeof value !== "string" || value === "") {
    throw validationFailed('Invalid request.\n\n"' + field + "\" wasn't supplied.", [
      { resource, field, code: "missing_field" },
    ]);
  }
  return value;
}

export function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw validationFailed(`Invalid request.\n\nInvalid type for "${field}": expected a string.`);
  }
  return value;
}

export function optionalBoolean(body: Record<string, unknown>, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") {
    throw validationFailed(`Invalid request.\n\nInvalid type for "${field}": expected a boolean.`);
  }
  return value;
}

/** `page`/`per_page` as GitHub reads them (per_page at most 100, default 30). */
export function pageOf<T>(
  ctx: RequestContext,
  items: readonly T[],
  baseUrl: string,
  defaultPerPage = 30,
): { items: T[]; headers: Record<string, string> } {
  const perPage = Math.min(
    Math.max(Number(ctx.query.get("per_page") ?? defaultPerPage) || defaultPerPage, 1),
    100,
  );
  const page = Math.max(Number(ctx.query.get("page") ?? 1) || 1, 1);
  const last = Math.max(Math.ceil(items.length / perPage), 1);
  const slice = items.slice((page - 1) * perPage, page * perPage);
  const link = (p: number): string => {
    const q = new URLSearchParams(ctx.query);
    q.set("per_page", String(perPage));
    q.set("page", String(p));
    return `${baseUrl}${ctx.path}?${q.toString()}`;
  };
  const rels: string[] = [];
  if (page > 1) rels.push(`<${link(page - 1)}>; rel="prev"`);
  if (page < last) rels.push(`<${link(page + 1)}>; rel="next"`, `<${link(last)}>; rel="last"`);
  if (page > 1) rels.push(`<${link(1)}>; rel="first"`);
  return { items: slice, headers: rels.length > 0 ? { link: rels.join(", ") } : {} };
}

/** What the surrounding fake lends the HTTP layer for each request. */
export interface HttpHooks {
  now(): number;
  requestId(): string;
  authenticate(authorization: string | undefined): Credential;
  /** Enforces the route's credential kind; throws the GitHubError GitHub would answer. */
  authorize(ctx: RequestContext): void;
  /** Primary rate limit: headers for this credential, and whether it is exhausted. */
  rateLimit(
    ctx: RequestContext,
    counts: boolean,
  ): { headers: Record<string, string>; exceeded: GitHubError | null };
  /** The fault layer: may delay, answer instead of the handler, or answer after it ran. */
  faults(
    ctx: RequestContext,
  ): Promise<{ instead?: FakeResponse; after?: FakeResponse; name?: string }>;
  /** Called with every answer (the request log and the schema guard). */
  observe(
    ctx: RequestContext,
    response: FakeResponse,
    fault: string | undefined,
    startedMs: number,
  ): void;
}

interface CompiledRoute {
  route: Route;
  regex: RegExp;
  names: string[];
}

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const pattern = route.path
    .split("/")
    .map((segment) =>
      segment.replace(
        /\{([a-z_]+)(\+?)\}|[.*+?^$()|[\]\\]/g,
        (match, name: string | undefined, rest: string) => {
          if (name === undefined) return `\\${match}`;
          names.push(name);
          return rest === "+" ? "(.+?)" : "([^/]+)";
        },
      ),
    )
    .join("/");
  return { route, regex: new RegExp(`^${pattern}$`), names };
}

export class HttpServer {
  private readonly routes: CompiledRoute[] = [];
  private server: Server | null = null;
  baseUrl = "";

  constructor(private readonly hooks: HttpHooks) {}

  add(route: Route): void {
    this.routes.push(compile(route));
  }

  /** Every operation the fake serves (GitHub's operationIds). */
  operationIds(): string[] {
    return this.routes.map((r) => r.route.operationId);
  }

  async listen(): Promise<string> {
    const server = createServer((req, res) => {
      void this.handle(req, res);
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.server = server;
    const port = (server.address() as AddressInfo).port;
    this.baseUrl = `http://127.0.0.1:${port}`;
    return this.baseUrl;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === null) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  }

  /** The matching route with the most literal text (`/commits/{ref+}/status` beats `/commits/{ref+}`). */
  private match(
    method: string,
    path: string,
  ): { route: Route; params: Record<string, string> } | null {
    let best: { route: Route; params: Record<string, string>; literal: number } | null = null;
    for (const compiled of this.routes) {
      if (compiled.route.method !== method) continue;
      const m = compiled.regex.exec(path);
      if (m === null) continue;
      const literal = compiled.route.path.replace(/\{[^}]+\}/g, "").length;
      if (best !== null && best.literal >= literal) continue;
      const params: Record<string, string> = {};
      compiled.names.forEach((name, i) => {
        params[name] = decodeURIComponent(m[i + 1] ?? "");
      });
      best = { route: compiled.route, params, literal };
    }
    return best;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const startedMs = this.hooks.now();
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = (req.method ?? "GET").toUpperCase();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const requestId = this.hooks.requestId();
    // A trailing slash matters only where a route takes the rest of the path (matching-refs).
    const matched =
      this.match(method, url.pathname) ??
      this.match(method, url.pathname.replace(/\/+$/, "") || "/");
    const route: Route = matched?.route ?? {
      method,
      path: url.pathname,
      operationId: "unknown",
      auth: "none",
      handler: () => {
        throw notFound();
      },
    };
    const ctx: RequestContext = {
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      params: matched?.params ?? {},
      body: {},
      credential: this.hooks.authenticate(req.headers.authorization),
      route,
      requestId,
    };
    let response: FakeResponse;
    let faultName: string | undefined;
    try {
      if (
        raw.trim() !== "" &&
        (req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded")
      ) {
        // OAuth's `/login/oauth/access_token` takes a form as well as JSON.
        ctx.body = Object.fromEntries(new URLSearchParams(raw));
      } else if (raw.trim() !== "") {
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch {
          throw new GitHubError(400, "Problems parsing JSON");
        }
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
          throw new GitHubError(400, "Body should be a JSON object");
        }
        ctx.body = parsed as Record<string, unknown>;
      }
      const fault = await this.hooks.faults(ctx);
      faultName = fault.name;
      if (fault.instead !== undefined) {
        response = fault.instead;
      } else {
        this.hooks.authorize(ctx);
        const limit = this.hooks.rateLimit(ctx, false);
        if (limit.exceeded !== null) throw limit.exceeded;
        response = await route.handler(ctx);
        if (fault.after !== undefined) response = fault.after;
      }
    } catch (error) {
      if (error instanceof GitHubError) {
        response = error.toResponse(`${DOCS}#${route.operationId}`);
      } else {
        const message = error instanceof Error ? error.message : String(error);
        response = { status: 500, body: { message: `Fake GitHub error: ${message}` } };
      }
    }
    const status = this.send(ctx, res, response);
    this.hooks.observe(ctx, { ...response, status }, faultName, startedMs);
  }

  /** Writes the answer; returns the status sent (304 when a conditional GET matched). */
  private send(ctx: RequestContext, res: ServerResponse, response: FakeResponse): number {
    let status = response.status;
    let text =
      response.raw !== undefined
        ? response.raw.text
        : response.body === undefined
          ? ""
          : JSON.stringify(response.body);
    const headers: Record<string, string> = {
      date: new Date(this.hooks.now()).toUTCString(),
      "x-github-request-id": ctx.requestId,
      "x-github-media-type": "github.v3; format=json",
      "x-github-api-version-selected": "2022-11-28",
      vary: "Accept, Authorization, Cookie, X-GitHub-OTP",
    };
    if (text !== "") {
      headers["content-type"] = response.raw?.contentType ?? "application/json; charset=utf-8";
    }
    // Conditional GETs (GitHub: a 304 does not count against the primary rate limit).
    let notModified = false;
    if (ctx.method === "GET" && status === 200) {
      const etag = `W/"${createHash("sha256")
        .update(ctx.headers.authorization ?? "")
        .update(text)
        .digest("hex")
        .slice(0, 40)}"`;
      headers.etag = etag;
      headers["cache-control"] = "private, max-age=60, s-maxage=60";
      if (ctx.headers["if-none-match"] === etag) {
        notModified = true;
        status = 304;
        text = "";
        delete headers["content-type"];
      }
    }
    const counts =
      !notModified && ctx.credential.kind !== "none" && ctx.credential.kind !== "rejected";
    Object.assign(headers, this.hooks.rateLimit(ctx, counts).headers, response.headers ?? {});
    res.writeHead(status, headers);
    res.end(text);
    return status;
  }
}
