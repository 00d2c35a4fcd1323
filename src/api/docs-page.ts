import { PATTERN_MESSAGES } from "./schemas.js";

/**
 * Renders the API reference page (`GET /docs`) from the OpenAPI document, so the page can never
 * disagree with what the server validates. Plain HTML, no scripts, no external assets.
 */
interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  const?: unknown;
}

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<
    string,
    { description?: string; content?: Record<string, { schema?: JsonSchema }> }
  >;
}

export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths?: Record<string, Record<string, Operation>>;
  security?: unknown[];
}

const escapeHtml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Backticks in descriptions become code spans; everything else is escaped. */
const prose = (text: string | undefined): string =>
  escapeHtml(text ?? "").replace(/`([^`]+)`/g, "<code>$1</code>");

function typeOf(schema: JsonSchema): string {
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(" or ");
  if (Array.isArray(schema.type)) {
    return schema.type.map((type) => typeOf({ ...schema, type })).join(" or ");
  }
  if (schema.type === "array") return `array of ${schema.items ? typeOf(schema.items) : "any"}`;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  return schema.format ? `${schema.type ?? "any"} (${schema.format})` : (schema.type ?? "any");
}

function rulesOf(schema: JsonSchema): string {
  const rules: string[] = [];
  if (schema.enum)
    rules.push(
      `one of ${schema.enum.map((v) => `<code>${escapeHtml(String(v))}</code>`).join(", ")}`,
    );
  if (schema.minimum !== undefined || schema.maximum !== undefined) {
    rules.push(`${schema.minimum ?? "…"} to ${schema.maximum ?? "…"}`);
  }
  if (schema.minLength !== undefined || schema.maxLength !== undefined) {
    rules.push(`length ${schema.minLength ?? 0} to ${schema.maxLength ?? "…"}`);
  }
  if (schema.maxItems !== undefined) rules.push(`at most ${schema.maxItems} items`);
  const patternRule = schema.pattern && PATTERN_MESSAGES.get(schema.pattern);
  if (patternRule) rules.push(escapeHtml(patternRule));
  if (
    schema.items &&
    (schema.items.minLength !== undefined || schema.items.maxLength !== undefined)
  ) {
    rules.push(`items: ${rulesOf(schema.items)}`);
  }
  return rules.join("; ");
}

function fieldRows(schema: JsonSchema, prefix = ""): string[] {
  const rows: string[] = [];
  const required = new Set(schema.required ?? []);
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const path = prefix + name;
    rows.push(
      `<tr><td><code>${escapeHtml(path)}</code></td><td>${escapeHtml(typeOf(field))}</td><td>${required.has(name) ? "yes" : ""}</td><td>${rulesOf(field)}</td><td>${prose(field.description)}</td></tr>`,
    );
    if (field.properties) rows.push(...fieldRows(field, `${path}.`));
    if (field.type === "array" && field.items?.properties)
      rows.push(...fieldRows(field.items, `${path}[].`));
  }
  return rows;
}

function fieldTable(schema: JsonSchema | undefined): string {
  const rows = schema ? fieldRows(schema) : [];
  if (rows.length === 0) return "<p>No fields.</p>";
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Rules</th><th>Meaning</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function example(schema: JsonSchema | undefined): unknown {
  if (!schema) return {};
  if (schema.anyOf?.[0]) return example(schema.anyOf[0]);
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) {
        const field = schema.properties?.[name];
        if (field) out[name] = example(field);
      }
      return out;
    }
    case "string":
      if (schema.enum?.[0] !== undefined) return schema.enum[0];
      return "main";
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    case "array":
      return [];
    default:
      return null;
  }
}

function curlExample(method: string, path: string, op: Operation, secured: boolean): string {
  const body = op.requestBody?.content?.["application/json"]?.schema;
  const parts = [`curl -sS -X ${method.toUpperCase()} "$MAINLINE_URL${path}"`];
  if (secured) parts.push(`-H "x-api-token: $MAINLINE_TOKEN"`);
  if (body) {
    const sample = example(body) as Record<string, unknown>;
    if ("repo" in sample) sample.repo = { host: "github.com", owner: "acme", name: "app" };
    parts.push(`-H "content-type: application/json"`, `-d '${JSON.stringify(sample)}'`);
  }
  return parts.join(" \\\n  ");
}

export function renderDocsPage(doc: OpenApiDocument): string {
  const sections: string[] = [];
  const toc: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(methods)) {
      const anchor = `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, "-");
      const secured = (op.security ?? doc.security ?? []).length > 0;
      const body = op.requestBody?.content?.["application/json"]?.schema;
      const responses = Object.entries(op.responses ?? {});
      const ok = responses.find(([status]) => status.startsWith("2"));
      const okSchema = ok?.[1].content?.["application/json"]?.schema;
      const errors = responses
        .filter(([status]) => !status.startsWith("2"))
        .map(([status, r]) => `<li><b>${status}</b>: ${prose(r.description)}</li>`)
        .join("");
      toc.push(
        `<li><a href="#${anchor}"><code>${method.toUpperCase()} ${escapeHtml(path)}</code></a> ${prose(op.summary)}</li>`,
      );
      sections.push(`<section id="${anchor}">
<h2><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h2>
<p><b>${prose(op.summary)}</b>. ${prose(op.description)}</p>
<p>${secured ? "Requires the <code>x-api-token</code> header." : "No authentication."}</p>
${body ? `<h3>Request body (JSON)</h3>${fieldTable(body)}` : ""}
<h3>Response ${ok ? ok[0] : ""}</h3>${okSchema ? fieldTable(okSchema) : "<p>Plain text.</p>"}
${errors ? `<h3>Errors</h3><ul>${errors}</ul>` : ""}
<h3>Example</h3><pre>${escapeHtml(curlExample(method, path, op, secured))}</pre>
</section>`);
    }
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f4f5f7;padding:.75rem;overflow:auto;border-radius:6px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #d8dbe0;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f5f7}section{border-top:2px solid #e3e5e8;margin-top:2rem}h2{margin-bottom:.25rem}
</style></head><body>
<h1>${escapeHtml(doc.info.title)} API reference <small>v${escapeHtml(doc.info.version)}</small></h1>
<p>${prose(doc.info.description)}</p>
<p>Errors always have the shape <code>{"error": {"code", "message", "details"?}}</code>. The machine-readable document is at <a href="/openapi.json"><code>/openapi.json</code></a>.</p>
<ul>${toc.join("")}</ul>
${sections.join("\n")}
</body></html>`;
}
