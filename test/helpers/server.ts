import type { AddressInfo } from "node:net";
import type { Writable } from "node:stream";
import {
  createHttpServer,
  createServices,
  startProviders,
  stopService,
  type ServiceOptions,
  type Services,
} from "../../src/app.js";
import type { ApiApp } from "../../src/api/types.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestServer {
  url: string;
  app: ApiApp;
  services: Services;
  database: TestDatabase;
  /** A token of the organization `acme`. */
  token: string;
  /** The id of the organization `acme`. */
  organizationId: string;
  /** POST a JSON body to `/v1/<operation>` with the given token (default: acme's). */
  call<T = Record<string, unknown>>(
    operation: string,
    body: unknown,
    options?: { token?: string | null; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  /** Any request, raw. */
  request(path: string, init?: RequestInit): Promise<ApiResponse>;
  close(): Promise<void>;
}

async function read<T>(response: Response): Promise<ApiResponse<T>> {
  return answer(response.status, response.headers, await response.text());
}

/** An answer as tests read it: JSON bodies parsed, the text kept. */
export function answer<T>(status: number, headers: Headers, text: string): ApiResponse<T> {
  let body: unknown = text;
  if (headers.get("content-type")?.includes("application/json")) body = JSON.parse(text);
  return { status, headers, body: body as T, text };
}

/** The request `call` sends: a JSON body, with the given token, else the organization's. */
export function callInit(
  defaultToken: string,
  body: unknown,
  options: { token?: string | null; headers?: Record<string, string> },
): RequestInit {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    ...options.headers,
  };
  const useToken = options.token === undefined ? defaultToken : options.token;
  if (useToken !== null) headers["x-api-token"] = useToken;
  return { method: "POST", headers, body: JSON.stringify(body) };
}

/**
 * A real HTTP server on a loopback port, over a fresh database of the dialect under test. With
 * `log`, the server's log (every level, JSON lines, the background parts' too, as `mainline
 * serve` writes it) goes there.
 */
export async function startTestServer(
  options: Omit<ServiceOptions, "dataDir"> & {
    startWorker?: boolean;
    org?: string;
    log?: Writable;
  } = {},
): Promise<TestServer> {
  const database = await createTestDatabase();
  const { startWorker = true, org = "acme", log, ...serviceOptions } = options;
  // The background parts log through the HTTP server's logger, made after them (as `serve` does).
  const logTo: { app?: ApiApp } = {};
  const services = createServices(database.handle, {
    ...serviceOptions,
    ...(log === undefined
      ? {}
      : {
          logger: {
            info: (fields, message) => logTo.app?.log.info(fields, message),
            warn: (fields, message) => logTo.app?.log.warn(fields, message),
            error: (fields, message) => logTo.app?.log.error(fields, message),
          },
        }),
    dataDir: database.dataDir,
    worker: { pollIntervalMs: 200, ...serviceOptions.worker },
  });
  const { token, organization } = await services.organizations.createOrganizationWithToken(org);
  const app = await createHttpServer(
    services,
    log === undefined ? false : { level: "trace", stream: log },
  );
  logTo.app = app;
  await app.listen({ host: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  if (startWorker) services.worker.start();
  services.engine.start();
  await startProviders(services.providers);
  return {
    url,
    app,
    services,
    database,
    token,
    organizationId: organization.id,
    async call(operation, body, options = {}) {
      return read(await fetch(`${url}/v1/${operation}`, callInit(token, body, options)));
    },
    async request(path, init) {
      return read(await fetch(`${url}${path}`, init));
    },
    async close() {
      await stopService(app, database.handle, services.worker, services.engine, services.providers);
      await database.cleanup();
    },
  };
}

export const REPO = { host: "github.com", owner: "acme", name: "app" };

/** The body of a 200 answer; anything else throws with the status and the answer's text. */
export async function ok<T>(
  response: Promise<{ status: number; body: T; text: string }>,
): Promise<T> {
  const answered = await response;
  if (answered.status !== 200) throw new Error(`${String(answered.status)}: ${answered.text}`);
  return answered.body;
}
