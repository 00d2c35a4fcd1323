import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Token, User } from "./model.js";

/**
 * The fake's HTTP layer: routing on GitLab's path templates (base `/api/v4`), Grape's error
 * bodies, parameters merged from the query and a JSON or form body (as Grape does), and GitLab's
 * pagination headers. Git's smart HTTP paths are handed to another handler; routes outside
 * `/api/v4` (the OAuth provider's) are `root` routes. What a route does lives in the route modules.
 */

export const API_PREFIX = "/api/v4";

export interface FakeResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A body sent as is (plain text, HTML); `body` is ignored then. */
  raw?: { contentType: string; text: string };
}

/** The credential a request carried, as the fake judged it. */
export type Credential =
  | { kind: "none" }
  | { kind: "token"; token: Token; user: User }
  | { kind: "rejected"; response: FakeResponse };

/**
 * What the token must allow: `read` (read_api or api), `write` (api), `user` (read_user too), or
 * nothing. Anonymous reads pass here; the project's visibility decides them.
 */
export type Scope = "read" | "write" | "user" | "none";

export interface RequestContext {
  method: string;
  /** The path after `/api/v4` (a root route's: the whole path), undecoded. */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  params: Record<string, string>;
  /** Query and body parameters together, body winning. */
  input: Record<string, unknown>;
  credential: Credential;
  route: Route;
}

export interface Route {
  method: string;
  /** GitLab's template after `/api/v4`; `:name` is one segment, `:name+` the rest (slashes too). */
  path: string;
  scope: Scope;
  /**
   * A route outside `/api/v4` (`path` is the whole path: the OAuth provider's `/oauth/…`). The API's
   * token guard does not run: the handler judges the credentials it takes.
   */
  root?: boolean;
  handler: (ctx: RequestContext) => Promise<FakeResponse> | FakeResponse;
}

/** An error answered as GitLab answers it: `{"message": …}` (or a body of its own). */
export class GitLabError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown = { message },
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toResponse(): FakeResponse {
    return { status: this.status, body: this.body, headers: this.headers };
  }
}

/** `not_found!("Project")` → `404 Project Not Found`; without a resource, `404 Not found`. */
export const notFound = (resource?: string): GitLabError =>
  new GitLabError(404, resource === undefined ? "404 Not found" : `404 ${resource} Not Found`);
export const unauthorized = (): GitLabError => new GitLabError(401, "401 Unauthorized");
export const forbidden = (reason?: string): GitLabError =>
  new GitLabError(403, reason === undefined ? "403 Forbidden" : `403 Forbidden - ${reason}`);
export const badRequest = (reason: string): GitLabError =>
  new GitLabError(400, `400 Bad request - ${reason}`);
export const notAllowed = (): GitLabError => new GitLabError(405, "405 Method Not Allowed");
/** Grape's validation error: `{"error": "title is missing"}`. */
export const missing = (...names: string[]): GitLabError =>
  new GitLabError(400, "missing", { error: names.map((n) => `${n} is missing`).join(", ") });

export function str(ctx: RequestContext, name: string): string | undefined {
  const value = ctx.input[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new GitLabError(400, "invalid", { error: `${name} is invalid` });
}

export function requireStr(ctx: RequestContext, name: string): string {
  const value = str(ctx, name);
  if (value === undefined || value === "") throw missing(name);
  return value;
}

export function bool(ctx: RequestContext, name: string): boolean | undefined {
  const value = ctx.input[name];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "boolean") return value;
  if (value === "true" || value === "1" || value === 1) return true;
  if (value === "false" || value === "0" || value === 0) return false;
  throw new GitLabError(400, "invalid", { error: `${name} is invalid` });
}

export function int(ctx: RequestContext, name: string): number | undefined {
  const value = ctx.input[name];
  if (value === undefined || value === null || value === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new GitLabError(400, "invalid", { error: `${name} is invalid` });
  return n;
}

/** A parameter's scalar value as text (objects as JSON). */
export function scalar(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** A list parameter given as an array or comma-separated (`add_labels=a,b`). */
export function list(ctx: RequestContext, name: string): string[] | undefined {
  const value = ctx.input[name];
  if (value === undefined || value === null) return undefined;
  const items = Array.isArray(value) ? value.map(scalar) : scalar(value).split(",");
  return items.map((s) => s.trim()).filter((s) => s !== "");
}

/** `page`/`per_page` (default 20, at most 100) with GitLab's `X-*` headers and `Link`. */
export function paginate<T>(
  ctx: RequestContext,
  items: readonly T[],
  baseUrl: string,
): { status: 200; body: T[]; headers: Record<string, string> } {
  const perPage = Math.min(Math.max(int(ctx, "per_page") ?? 20, 1), 100);
  const page = Math.max(int(ctx, "page") ?? 1, 1);
  const totalPages = Math.max(Math.ceil(items.length / perPage), 1);
  const link = (p: number): string => {
    const q = new URLSearchParams(ctx.query);
    q.set("page", String(p));
    q.set("per_page", String(perPage));
    return `${baseUrl}${API_PREFIX}${ctx.path}?${q.toString()}`;
  };
  const rels: string[] = [];
  if (page > 1) rels.push(`<${link(page - 1)}>; rel="prev"`);
  if (page < totalPages) rels.push(`<${link(page + 1)}>; rel="next"`);
  rels.push(`<${link(1)}>; rel="first"`, `<${link(totalPages)}>; rel="last"`);
  return {
    status: 200,
    body: items.slice((page - 1) * perPage, page * perPage),
    headers: {
      "x-page": String(page),
      "x-per-page": String(perPage),
      "x-next-page": page < totalPages ? String(page + 1) : "",
      "x-prev-page": page > 1 ? String(page - 1) : "",
      "x-total": String(items.length),
      "x-total-pages": String(totalPages),
      link: rels.join(", "),
    },
  };
}

/** What the surrounding fake lends the HTTP layer. */
export interface HttpHooks {
  authenticate(req: IncomingMessage, query: URLSearchParams): Credential;
  /** Enforces the route's scope; throws the GitLabError GitLab would answer. */
  authorize(ctx: RequestContext): void;
  faults(
    method: string,
    path: string,
  ): Promise<{ instead?: FakeResponse; after?: FakeResponse; name?: string }>;
  observe(ctx: RequestContext, status: number, fault: string | undefined, startedMs: number): void;
  /** Requests outside `/api/v4` (git's smart HTTP); false when not handled. */
  other(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean>;
}

interface CompiledRoute {
  route: Route;
  regex: RegExp;
  names: string[];
  literal: number;
}

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const pattern = route.path
    .split("/")
    .map((segment) => {
      const m = /^:([a-z_]+)(\+?)$/.exec(segment);
      if (m === null) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      names.push(m[1] ?? "");
      return m[2] === "+" ? "(.+?)" : "([^/]+)";
    })
    .join("/");
  const literal = route.path.replace(/:[a-z_]+\+?/g, "").length;
  return { route, regex: new RegExp(`^${pattern}$`), names, literal };
}

export class HttpServer {
  private readonly routes: CompiledRoute[] = [];
  private server: Server | null = null;
  baseUrl = "";

  constructor(private readonly hooks: HttpHooks) {}

  add(route: Route): void {
    this.routes.push(compile(route));
  }

  async listen(): Promise<string> {
    const server = createServer((req, res) => {
      void this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`fake GitLab error: ${error instanceof Error ? error.message : String(error)}`);
      });
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.server = server;
    this.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.baseUrl;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === null) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  }

  /**
   * The matching route with the most literal text. API paths match API routes only; other paths
   * match the root routes first (then, as before, API routes).
   */
  private match(
    method: string,
    path: string,
    api: boolean,
  ): { route: Route; params: Record<string, string> } {
    const root = api ? null : this.best(method, path, true);
    const best = root ?? this.best(method, path, false);
    if (best === null) {
      const fallback: Route = {
        method,
        path,
        scope: "none",
        handler: () => {
          throw new GitLabError(404, "404 Not Found", { error: "404 Not Found" });
        },
      };
      return { route: fallback, params: {} };
    }
    const params: Record<string, string> = {};
    best.names.forEach((name, i) => {
      params[name] = decodeURIComponent(best.m[i + 1] ?? "");
    });
    return { route: best.route, params };
  }

  private best(
    method: string,
    path: string,
    root: boolean,
  ): (CompiledRoute & { m: RegExpExecArray }) | null {
    let best: (CompiledRoute & { m: RegExpExecArray }) | null = null;
    for (const compiled of this.routes) {
      if (compiled.route.method !== method || (compiled.route.root ?? false) !== root) continue;
      const m = compiled.regex.exec(path);
      if (m === null || (best !== null && best.literal >= compiled.literal)) continue;
      best = { ...compiled, m };
    }
    return best;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const startedMs = Date.now();
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const rawPath = (req.url ?? "/").split("?")[0] ?? "/";
    if (!rawPath.startsWith(`${API_PREFIX}/`)) {
      if (await this.hooks.other(req, res, url)) return;
    }
    const method = (req.method ?? "GET").toUpperCase();
    const api = rawPath.startsWith(API_PREFIX);
    const path = api ? rawPath.slice(API_PREFIX.length) : rawPath;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const matched = this.match(method, path.replace(/\/+$/, "") || "/", api);
    const ctx: RequestContext = {
      method,
      path,
      query: url.searchParams,
      headers: req.headers,
      params: matched.params,
      input: Object.fromEntries(url.searchParams),
      credential: { kind: "none" },
      route: matched.route,
    };
    let response: FakeResponse;
    let faultName: string | undefined;
    try {
      ctx.input = { ...ctx.input, ...parseBody(req, raw) };
      const fault = await this.hooks.faults(method, path);
      faultName = fault.name;
      if (fault.instead !== undefined) {
        response = fault.instead;
      } else {
        if (matched.route.root !== true) {
          ctx.credential = this.hooks.authenticate(req, url.searchParams);
          this.hooks.authorize(ctx);
        }
        response = await matched.route.handler(ctx);
        if (fault.after !== undefined) response = fault.after;
      }
    } catch (error) {
      if (error instanceof GitLabError) response = error.toResponse();
      else {
        const message = error instanceof Error ? error.message : String(error);
        response = {
          status: 500,
          body: { message: `500 Internal Server Error (fake: ${message})` },
        };
      }
    }
    send(res, response);
    this.hooks.observe(ctx, response.status, faultName, startedMs);
  }
}

function parseBody(req: IncomingMessage, raw: string): Record<string, unknown> {
  if (raw.trim() === "") return {};
  const type = req.headers["content-type"] ?? "";
  if (type.startsWith("application/x-www-form-urlencoded")) {
    return Object.fromEntries(new URLSearchParams(raw));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new GitLabError(400, "invalid JSON", {
      error: "The provided content-type '' is not supported.",
    });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new GitLabError(400, "invalid body", { error: "body is invalid" });
  }
  return parsed as Record<string, unknown>;
}

function send(res: ServerResponse, response: FakeResponse): void {
  const text =
    response.raw !== undefined
      ? response.raw.text
      : response.body === undefined
        ? ""
        : JSON.stringify(response.body);
  const headers: Record<string, string> = {
    "cache-control": "max-age=0, private, must-revalidate",
    vary: "Origin",
    "x-content-type-options": "nosniff",
    "x-frame-options": "SAMEORIGIN",
    "x-gitlab-meta": '{"correlation_id":"fake","version":"1"}',
  };
  if (text !== "") headers["content-type"] = response.raw?.contentType ?? "application/json";
  Object.assign(headers, response.headers ?? {});
  res.writeHead(response.status, headers);
  res.end(text);
}
