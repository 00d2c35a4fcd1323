/**
 * Keeping secrets out of log lines and messages: each pattern below is one kind of secret (our
 * tokens and session ids, credential query values, URL passwords, GitHub, GitLab, Slack and
 * Atlassian tokens, Slack incoming-webhook paths, Linear keys, JWTs, PEM keys).
 * Applied to text that may echo input (URLs, error messages, stacks); a new kind of secret the
 * service handles needs its pattern here. Fields we log on purpose never carry a secret.
 */

export const REDACTED = "[redacted]";

/** `?signature=…`, `&token=…`: the name is kept (it tells what was there), the value goes. */
const SECRET_PARAMETERS =
  /([?&;](?:signature|sig|token|csrf|access_token|api_token|x-api-token|apikey|api_key|key|secret|password|passwd|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|client_secret|code|state)=)[^&#\s"'<>]*/gi;
/** `scheme://user:password@host` → `scheme://user:[redacted]@host`. */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^:/@\s"'<>]*):[^@/\s"'<>]*@/gi;
/**
 * Our API tokens (`mlt_`) and dashboard session ids (`mls_`): the prefix + 43 base64url
 * characters (shorter runs too, in case of a cut).
 */
const API_TOKEN = /\b(mlt|mls)_[A-Za-z0-9_-]{8,}/g;
/** GitHub's tokens: installation (`ghs_`), personal (`ghp_`, `github_pat_`), OAuth, user, refresh. */
const GITHUB_TOKEN = /\b(gh[psour]_|github_pat_)[A-Za-z0-9_]{8,}/g;
/**
 * GitLab's prefixed tokens: personal, project and group access (`glpat-`), OAuth application
 * secrets (`gloas-`), deploy (`gldt-`), runner (`glrt-`), CI job (`glcbt-`), trigger (`glptt-`),
 * feed (`glft-`), incoming mail (`glimt-`), SCIM (`glsoat-`).
 */
const GITLAB_TOKEN =
  /\b(glpat-|gloas-|gldt-|glrt-|glcbt-|glptt-|glft-|glimt-|glsoat-)[A-Za-z0-9_.-]{8,}/g;
/** Linear's personal API keys (`lin_api_`) and OAuth access tokens (`lin_oauth_`). */
const LINEAR_KEY = /\b(lin_api_|lin_oauth_)[A-Za-z0-9]{8,}/g;
/** Atlassian API tokens (Jira Cloud ticket connections): `ATATT` + base64url-ish text. */
const ATLASSIAN_TOKEN = /\bATATT[A-Za-z0-9_=-]{8,}/g;
/** Outbound webhook signing secrets (`whsec_` + base64). */
const WEBHOOK_SECRET = /\bwhsec_[A-Za-z0-9+/=]{8,}/g;
/** Slack's tokens: bot (`xoxb-`), user (`xoxp-`), app (`xapp-`), refresh, legacy. */
const SLACK_TOKEN = /\b(xox[abposre]-|xapp-)[A-Za-z0-9-]{8,}/g;
/** A Slack incoming webhook's path (`/services/T…/B…/<secret>`): the URL is the credential. */
const SLACK_WEBHOOK = /(\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/)[A-Za-z0-9]+/g;
/** A JSON Web Token: three base64url parts, the first two JSON objects (`eyJ…`). */
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
/** A PEM private key, whole or cut (`\n` escaped or not). */
const PEM_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g;

/** `text` with every secret it shows replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return text
    .replace(SECRET_PARAMETERS, `$1${REDACTED}`)
    .replace(URL_PASSWORD, `$1:${REDACTED}@`)
    .replace(API_TOKEN, (_match, prefix: string) => `${prefix}_${REDACTED}`)
    .replace(GITHUB_TOKEN, `$1${REDACTED}`)
    .replace(GITLAB_TOKEN, `$1${REDACTED}`)
    .replace(LINEAR_KEY, `$1${REDACTED}`)
    .replace(WEBHOOK_SECRET, `whsec_${REDACTED}`)
    .replace(SLACK_TOKEN, `$1${REDACTED}`)
    .replace(SLACK_WEBHOOK, `$1${REDACTED}`)
    .replace(ATLASSIAN_TOKEN, `ATATT${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(PEM_KEY, REDACTED);
}
