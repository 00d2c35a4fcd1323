import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * GitHub's own descriptions, read from the Octokit packages (devDependencies): the REST OpenAPI
 * description (its named examples are the fake's object templates, its schemas the guard's) and
 * the webhooks description. Loaded once per process, on first use; `generated/api.github.com.json`
 * is read directly because the package's index eagerly loads all ten descriptions (385 MB).
 */

const require = createRequire(import.meta.url);

export interface OpenApiParameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: unknown;
}

export interface OpenApiOperation {
  operationId?: string;
  responses?: Record<string, unknown>;
  parameters?: (OpenApiParameter | { $ref: string })[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: {
    schemas: Record<string, unknown>;
    examples: Record<string, { value: unknown }>;
    responses: Record<string, unknown>;
    parameters: Record<string, OpenApiParameter>;
  };
}

export interface WebhooksDocument {
  webhooks: Record<
    string,
    { post: { requestBody: { content: Record<string, { schema: unknown }> } } }
  >;
  components: { schemas: Record<string, unknown> };
}

let rest: OpenApiDocument | null = null;
let webhooks: WebhooksDocument | null = null;

export function restDescription(): OpenApiDocument {
  rest ??= JSON.parse(
    readFileSync(require.resolve("@octokit/openapi/generated/api.github.com.json"), "utf8"),
  ) as OpenApiDocument;
  return rest;
}

export function webhooksDescription(): WebhooksDocument {
  webhooks ??= JSON.parse(
    readFileSync(
      require.resolve("@octokit/openapi-webhooks/generated/api.github.com.json"),
      "utf8",
    ),
  ) as WebhooksDocument;
  return webhooks;
}

/** A deep copy of one of GitHub's named examples (`components.examples[name].value`). */
export function example(name: string): Record<string, unknown> {
  const found = restDescription().components.examples[name];
  if (found === undefined) throw new Error(`no OpenAPI example named ${name}`);
  return structuredClone(found.value) as Record<string, unknown>;
}
