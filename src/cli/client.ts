/** A small client of Mainline's HTTP API for the CLI's remote commands. */
import { redactSecrets } from "../lib/redact.js";

export interface ClientOptions {
  url: string;
  token: string | undefined;
}

interface ErrorBody {
  error?: { code?: string; message?: string; details?: { path: string; message: string }[] };
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** The server answered an error: its HTTP status, and its message as the CLI's. */
export class ApiAnswerError extends CliError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export async function callApi<T>(
  options: ClientOptions,
  operation: string,
  body: unknown,
  timeoutMs = 30_000,
): Promise<T> {
  if (!options.token) {
    throw new CliError(
      "No API token: pass --token or set MAINLINE_TOKEN (create one with `mainline token create --org <slug>`).",
    );
  }
  const url = `${options.url.replace(/\/+$/, "")}/v1/${operation}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-token": options.token },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
    throw new CliError(
      `Cannot reach Mainline at ${redactSecrets(options.url)} (${cause}). Is \`mainline serve\` running? Set --url or MAINLINE_URL.`,
    );
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new CliError(
      `Unexpected answer from ${redactSecrets(url)} (HTTP ${response.status}): ${text.slice(0, 200)}`,
    );
  }
  if (!response.ok) {
    const error = (parsed as ErrorBody).error;
    const details = (error?.details ?? []).map((d) => `\n  - ${d.path}: ${d.message}`).join("");
    throw new ApiAnswerError(
      `${error?.message ?? `HTTP ${response.status}`}${details}`,
      response.status,
    );
  }
  return parsed as T;
}
