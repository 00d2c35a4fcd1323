/**
 * Keeping secrets out of log lines and messages. What counts as a secret here: API tokens
 * (`mlt_…`), dashboard session ids (`mls_…`), the values of credential-like query parameters (the signature of an upload URL,
 * `token`, `key`, `password`, cloud storage signatures…) and the password part of a URL.
 *
 * These are applied to text that may echo input (request URLs, error messages and stacks); the
 * fields we log on purpose never carry a secret in the first place.
 */

export const REDACTED = "[redacted]";

/** `?signature=…`, `&token=…`: the name is kept (it tells what was there), the value goes. */
const SECRET_PARAMETERS =
  /([?&;](?:signature|sig|token|csrf|access_token|api_token|x-api-token|apikey|api_key|key|secret|password|passwd|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)=)[^&#\s"'<>]*/gi;
/** `scheme://user:password@host` → `scheme://user:[redacted]@host`. */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^:/@\s"'<>]*):[^@/\s"'<>]*@/gi;
/**
 * Our API tokens (`mlt_`) and dashboard session ids (`mls_`): the prefix + 43 base64url
 * characters (shorter runs too, in case of a cut).
 */
const API_TOKEN = /\b(mlt|mls)_[A-Za-z0-9_-]{8,}/g;

/** `text` with every secret it shows replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return text
    .replace(SECRET_PARAMETERS, `$1${REDACTED}`)
    .replace(URL_PASSWORD, `$1:${REDACTED}@`)
    .replace(API_TOKEN, (_match, prefix: string) => `${prefix}_${REDACTED}`);
}
