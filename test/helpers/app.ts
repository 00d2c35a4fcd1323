import type { LightMyRequestResponse } from "fastify";
import {
  createHttpServer,
  createServices,
  stopService,
  type ServiceOptions,
} from "../../src/app.js";
import { createTestDatabase } from "./database.js";
import { answer, callInit, type ApiResponse, type TestServer } from "./server.js";

/** A `TestServer` without a socket: what a test of routes alone needs. */
export type TestApp = Omit<TestServer, "url">;

/**
 * The services and the fastify app over a fresh database of the dialect under test, answering
 * through `app.inject()`: no port, and no background loop started (no upload worker, engine, or
 * provider watcher, runner or webhook inbox). Redirects are answered, not followed.
 */
export async function createTestApp(
  options: Omit<ServiceOptions, "dataDir"> & { org?: string } = {},
): Promise<TestApp> {
  const database = await createTestDatabase();
  const { org = "acme", ...serviceOptions } = options;
  const services = createServices(database.handle, {
    ...serviceOptions,
    dataDir: database.dataDir,
  });
  const { token, organization } = await services.organizations.createOrganizationWithToken(org);
  const app = await createHttpServer(services, false);
  const request = async <T>(path: string, init: RequestInit = {}): Promise<ApiResponse<T>> => {
    // Headers and body as fetch would send them (a string body is text/plain unless told).
    const normalized = new Request(`http://127.0.0.1${path}`, init);
    const payload = normalized.body ? Buffer.from(await normalized.arrayBuffer()) : undefined;
    return read(
      await app.inject({
        method: normalized.method,
        url: path,
        headers: Object.fromEntries(normalized.headers),
        ...(payload ? { payload } : {}),
      }),
    );
  };
  return {
    app,
    services,
    database,
    token,
    organizationId: organization.id,
    call(operation, body, options = {}) {
      return request(`/v1/${operation}`, callInit(token, body, options));
    },
    request,
    async close() {
      // Nothing was started, but a request may have left the engine a step to finish.
      await stopService(app, database.handle, services.worker, services.engine, services.providers);
      await database.cleanup();
    },
  };
}

/** An injected answer as `startTestServer`'s fetch reads one. */
function read<T>(response: LightMyRequestResponse): ApiResponse<T> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, String(one));
  }
  return answer(response.statusCode, headers, response.body);
}
