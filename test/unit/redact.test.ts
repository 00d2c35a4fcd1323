import { describe, expect, it } from "vitest";
import { redactSecrets } from "../../src/lib/redact.js";

describe("redactSecrets", () => {
  it("hides credential query values, URL passwords and API tokens, and nothing else", () => {
    const token = "mlt_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";
    expect(redactSecrets("/v1/uploads/u1?expires=1795712799192&signature=abc_DEF-123")).toBe(
      "/v1/uploads/u1?expires=1795712799192&signature=[redacted]",
    );
    expect(redactSecrets("GET /x?Token=abc&page=2&X-Amz-Signature=f00 done")).toBe(
      "GET /x?Token=[redacted]&page=2&X-Amz-Signature=[redacted] done",
    );
    expect(redactSecrets("postgres://app:s3cr3t@db:5432/main")).toBe(
      "postgres://app:[redacted]@db:5432/main",
    );
    expect(redactSecrets(`token ${token} refused`)).toBe("token mlt_[redacted] refused");
    const session = "mls_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";
    expect(redactSecrets(`cookie mainline_session=${session}`)).toBe(
      "cookie mainline_session=mls_[redacted]",
    );
    expect(redactSecrets("/sign-in?next=/a&csrf=abc")).toBe("/sign-in?next=/a&csrf=[redacted]");
    expect(redactSecrets("/sign-in/github/callback?code=0a1b2c&state=XyZ_1")).toBe(
      "/sign-in/github/callback?code=[redacted]&state=[redacted]",
    );
    expect(redactSecrets("client_id=Iv1&client_secret=f00ba4")).toBe(
      "client_id=Iv1&client_secret=[redacted]",
    );
    expect(redactSecrets("Jira token ATATT3xFfGF0T4nKq-_=abc123 was refused")).toBe(
      "Jira token ATATT[redacted] was refused",
    );
    const harmless = "No operation GET /v1/nowhere. Expires in 5 minutes; key names: a, b.";
    expect(redactSecrets(harmless)).toBe(harmless);
  });
});
