import { Type } from "typebox";
import { ApiError } from "../../lib/errors.js";
import { principalOf } from "../plugins/auth.js";
import { COMMON_ERRORS, errorResponses } from "../schemas.js";
import type { ApiApp } from "../types.js";

const DATABASE_TIMEOUT_MS = 2000;

/** True when the database answers a trivial query within two seconds. */
async function databaseIsUp(ping: () => Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, DATABASE_TIMEOUT_MS);
  });
  try {
    return await Promise.race([ping().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

const StatusColor = Type.String({ enum: ["green", "yellow", "red"] });

const StatusResponse = Type.Object({
  overallStatus: Type.Object({
    type: Type.String({ enum: ["up", "impacted"] }),
    color: StatusColor,
    overallStatusDescription: Type.String(),
    impactedStatuses: Type.Optional(
      Type.Array(
        Type.Object({ name: Type.String(), color: StatusColor, statusDescription: Type.String() }),
      ),
    ),
  }),
  statuses: Type.Array(
    Type.Object({ name: Type.String(), color: StatusColor, statusDescription: Type.String() }),
  ),
});

/** Unauthenticated service endpoints: liveness with a database check, and Trunk's /v1/status. */
export function registerServiceRoutes(app: ApiApp, pingDatabase: () => Promise<void>): void {
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["Service"],
        summary: "Health check",
        description: "200 when the service and its database answer; 503 otherwise.",
        response: {
          200: Type.Object({ status: Type.Literal("ok"), database: Type.Literal("ok") }),
          ...errorResponses(503),
        },
      },
    },
    async () => {
      if (!(await databaseIsUp(pingDatabase))) {
        throw new ApiError("unavailable", "The database is not reachable.");
      }
      return { status: "ok" as const, database: "ok" as const };
    },
  );

  app.get(
    "/v1/status",
    {
      schema: {
        tags: ["Service"],
        summary: "Status of the service",
        description: "Trunk's status shape: `up`/green, or `impacted` naming what is down.",
        response: { 200: StatusResponse },
      },
    },
    async () => {
      const api = { name: "API", color: "green", statusDescription: "Operational" };
      if (await databaseIsUp(pingDatabase)) {
        return {
          overallStatus: {
            type: "up",
            color: "green",
            overallStatusDescription: "All systems operational",
          },
          statuses: [api, { name: "Database", color: "green", statusDescription: "Operational" }],
        };
      }
      const database = { name: "Database", color: "red", statusDescription: "Unreachable" };
      return {
        overallStatus: {
          type: "impacted",
          color: "red",
          overallStatusDescription: "Impacted",
          impactedStatuses: [database],
        },
        statuses: [api, database],
      };
    },
  );
}

/** `POST /v1/whoami`: which organization a token belongs to (a cheap way to check a token). */
export function registerWhoAmI(app: ApiApp): void {
  app.post(
    "/v1/whoami",
    {
      schema: {
        tags: ["Service"],
        summary: "Identify the caller",
        description: "Answers the organization and token id of the `x-api-token`; any JSON body.",
        response: {
          200: Type.Object({
            organization: Type.Object({ slug: Type.String() }),
            tokenId: Type.String(),
          }),
          ...errorResponses(...COMMON_ERRORS),
        },
      },
    },
    (request) => {
      const principal = principalOf(request);
      return Promise.resolve({
        organization: { slug: principal.organizationSlug },
        tokenId: principal.tokenId,
      });
    },
  );
}
