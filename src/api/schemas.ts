import { Type, type TSchema, type TUnsafe } from "typebox";
import { ERROR_STATUS } from "../lib/errors.js";

/**
 * Schema pieces shared by every operation. Each route's schema is at once its request type, its
 * validator, its serializer and its OpenAPI entry, so what is written here is what the server
 * accepts, exactly.
 */

/** Messages for `pattern` failures, keyed by pattern, so errors read as prose, not regexes. */
export const PATTERN_MESSAGES = new Map<string, string>();

function caseInsensitivePattern(values: readonly string[]): string {
  const letters = (value: string) =>
    value.replace(/[a-z]/gi, (ch) => `[${ch.toLowerCase()}${ch.toUpperCase()}]`);
  return `^(?:${values.map(letters).join("|")})$`;
}

/**
 * An enum that accepts any letter case (`RUNNING` = `running`). Handlers lower-case the value;
 * responses always use the lowercase spelling.
 */
export function CaseInsensitiveEnum<const V extends readonly string[]>(
  values: V,
  description: string,
): TUnsafe<V[number]> {
  const pattern = caseInsensitivePattern(values);
  PATTERN_MESSAGES.set(pattern, `must be one of ${values.join(", ")} (any letter case)`);
  return Type.Unsafe<V[number]>(
    Type.String({
      pattern,
      description: `${description} One of: ${values.map((v) => `\`${v}\``).join(", ")}; any letter case is accepted.`,
      examples: [values[0]],
    }),
  );
}

/** Output enums: always the lowercase spelling. */
export function OutputEnum<const V extends readonly string[]>(
  values: V,
  description: string,
): TUnsafe<V[number]> {
  return Type.Unsafe<V[number]>(Type.String({ enum: [...values], description }));
}

/**
 * A git branch name, by the rules of `git check-ref-format --branch`: no control characters,
 * spaces or `~^:?*[\`, no `..`, `@{` or `//`, no component starting with `.`, not starting or
 * ending with `/`, not ending with `.` or `.lock`, and not `@` alone.
 */
const BRANCH_PATTERN =
  "^(?!/)(?!.*(?:\\.\\.|@\\{|//|/\\.))(?!\\.)(?!@$)[^\\x00-\\x20\\x7f~^:?*\\[\\\\]+(?<!\\.lock)(?<![/.])$";
PATTERN_MESSAGES.set(BRANCH_PATTERN, "must be a valid git branch name");

export const BranchName = (description: string) =>
  Type.String({ minLength: 1, maxLength: 255, pattern: BRANCH_PATTERN, description });

/** What the local git host accepts as an owner or name (it becomes a directory name on disk). */
const LOCAL_NAME_RULE =
  "On the local git host (`local`): at most 100 characters, only letters, digits, `.`, `_` and `-`, not starting with `.` and not ending with `.git` (otherwise 400 naming the field).";

const RepoField = (description: string) =>
  Type.String({ minLength: 1, maxLength: 255, description });

export const RepoRefSchema = Type.Object(
  {
    host: RepoField("Host of the repository, e.g. `github.com` or `local`."),
    owner: RepoField(`Owner (user, organization, or GitLab group path). ${LOCAL_NAME_RULE}`),
    name: RepoField(`Repository name. ${LOCAL_NAME_RULE}`),
  },
  { description: "The repository, matched case-insensitively within the organization." },
);

/** A whole number in `[min, 4294967295]`, as the settings of Trunk's API. */
export const UInt32 = (min: 0 | 1, description: string) =>
  Type.Integer({ minimum: min, maximum: 4294967295, description });

/**
 * The digits of a whole number from 0 to 4294967295, without leading zeros: the pull-request
 * numbers Trunk's merge-action sends as JSON strings.
 */
export const UINT32_DIGITS =
  "^(?:0|[1-9][0-9]{0,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5])$";
PATTERN_MESSAGES.set(UINT32_DIGITS, "must be a whole number from 0 to 4294967295");

/**
 * A pull-request number: an integer or a numeric string. One schema with two types (bounds apply to
 * numbers, the pattern to strings), so errors name the field once. Handlers read it with
 * `prNumberOf`.
 */
export const PrNumber = (description = "Pull request number; an integer or a numeric string.") =>
  Type.Unsafe<number | string>({
    type: ["integer", "string"],
    minimum: 0,
    maximum: 4294967295,
    pattern: UINT32_DIGITS,
    description,
    examples: [123],
  });

export const prNumberOf = (value: number | string): number =>
  typeof value === "number" ? value : Number(value);

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ enum: Object.keys(ERROR_STATUS), description: "Machine-readable code." }),
      message: Type.String({ description: "One clear sentence." }),
      details: Type.Optional(
        Type.Array(
          Type.Object({
            path: Type.String({ description: "The offending field, e.g. `repo.name`." }),
            message: Type.String(),
          }),
        ),
      ),
    }),
  },
  { description: "Every 4xx/5xx answer." },
);

const ERROR_DESCRIPTIONS: Partial<Record<number, string>> = {
  400: "Invalid request (`invalid_request`), malformed JSON, or a bad page token.",
  401: "Missing, unknown or revoked `x-api-token` (`unauthorized`).",
  403: "The token's organization may not access this resource (`forbidden`).",
  404: "No such resource (`not_found`).",
  409: "The resource is in a state that refuses this change (`conflict`).",
  413: "The JSON body is larger than 20 MiB (`payload_too_large`).",
  414: "A path parameter is longer than any valid id (`uri_too_long`).",
  415: "The body is not `application/json` (`unsupported_media_type`).",
  500: "Unexpected server failure (`internal`).",
  502: "A ticket provider refused or failed the call (`ticket_provider_error`); the message names the provider and what it answered.",
  503: "Temporarily unavailable (`unavailable`): the database is away or the server is stopping; retry after `Retry-After` seconds.",
  507: "The server's disk is full; nothing was stored, retry later (`insufficient_storage`).",
};

/** Response schemas for the error statuses an operation can answer. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const responses: Record<number, TSchema> = {};
  for (const status of statuses) {
    responses[status] = { ...ErrorEnvelope, description: ERROR_DESCRIPTIONS[status] ?? "Error" };
  }
  return responses;
}

/** The error statuses every authenticated JSON operation can answer. */
export const COMMON_ERRORS = [400, 401, 413, 415, 500, 503] as const;

export const EmptyObject = Type.Object({}, { description: "OK: an empty JSON object." });
