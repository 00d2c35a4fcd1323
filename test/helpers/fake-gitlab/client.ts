import { execFile } from "node:child_process";

/**
 * Small clients for tests of the fake GitLab: `api()` (fetch with a `PRIVATE-TOKEN`, the answer
 * parsed), and `gitIn()` (real git in a working directory, isolated from the user's config).
 */

export type Json = Record<string, unknown>;

export interface ApiAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON object (an empty object for other bodies). */
  body: Json;
  /** The parsed JSON array (empty for other bodies). */
  items: Json[];
  text: string;
}

export type Api = (
  method: string,
  path: string,
  params?: Record<string, unknown>,
) => Promise<ApiAnswer>;

/** A client of `apiUrl` with `token` (none: anonymous); GET params go in the query string. */
export function api(apiUrl: string, token?: string): Api {
  return async (method, path, params) => {
    const url = new URL(`${apiUrl}${path}`);
    const headers: Record<string, string> = {};
    if (token !== undefined) headers["PRIVATE-TOKEN"] = token;
    let body: string | undefined;
    if (params !== undefined && method === "GET") {
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, String(v));
    } else if (params !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(params);
    }
    const response = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // plain text or HTML
    }
    const isObject = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed);
    return {
      status: response.status,
      headers: response.headers,
      body: isObject ? (parsed as Json) : {},
      items: Array.isArray(parsed) ? (parsed as Json[]) : [],
      text,
    };
  };
}

export const GIT_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: "/nonexistent",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "Dev",
  GIT_AUTHOR_EMAIL: "dev@example.com",
  GIT_COMMITTER_NAME: "Dev",
  GIT_COMMITTER_EMAIL: "dev@example.com",
  LANG: "C",
};

/** Runs git in `cwd`; resolves with its exit code and output (never rejects on a git failure). */
export function gitIn(
  cwd: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("git", args, { cwd, env: GIT_ENV, encoding: "utf8" }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}
