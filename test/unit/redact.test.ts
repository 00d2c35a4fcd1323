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
    expect(
      redactSecrets("GitLab refused glpat-xy1Z_abcdefghij0123 and gloas-0a1b2c3d4e5f6a7b"),
    ).toBe("GitLab refused glpat-[redacted] and gloas-[redacted]");
    expect(redactSecrets("key lin_api_0123456789abcdefABCDEF0123456789abcdefAB refused")).toBe(
      "key lin_api_[redacted] refused",
    );
    expect(redactSecrets("Bearer lin_oauth_8f3a9c0b1d2e3f405162738495a6b7c8")).toBe(
      "Bearer lin_oauth_[redacted]",
    );
    expect(redactSecrets("Bearer xoxb-1111-2222-AbCdEfGh refused")).toBe(
      "Bearer xoxb-[redacted] refused",
    );
    expect(redactSecrets("POST https://hooks.slack.com/services/T0A1/B0B2/XyZ123abc failed")).toBe(
      "POST https://hooks.slack.com/services/T0A1/B0B2/[redacted] failed",
    );
    // Teams Workflows URLs carry their credential in `sig`.
    expect(redactSecrets("https://x.logic.azure.com/workflows/1/invoke?sp=%2F&sig=AbC-12_")).toBe(
      "https://x.logic.azure.com/workflows/1/invoke?sp=%2F&sig=[redacted]",
    );
    expect(redactSecrets("Jira token ATATT3xFfGF0T4nKq-_=abc123 was refused")).toBe(
      "Jira token ATATT[redacted] was refused",
    );
    const harmless = "No operation GET /v1/nowhere. Expires in 5 minutes; key names: a, b.";
    expect(redactSecrets(harmless)).toBe(harmless);
  });
});
