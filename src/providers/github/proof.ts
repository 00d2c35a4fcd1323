/**
 * Proof of control: an organization's token may link a GitHub App installation only when the caller
 * also controls its GitHub account, shown by a GitHub token of theirs (the account itself, or an
 * active owner of the organization). The token is used for these reads only, and never stored or
 * logged.
 */
import { ApiError } from "../../lib/errors.js";
import type { GitHubClient } from "./client.js";
import { statusOf } from "./conditional.js";

export interface InstalledAccount {
  id: number;
  login: string;
  /** `User`, `Organization` or `Enterprise`. */
  type: string;
}

/** Pure: whether the token's user is the account an App was installed on. */
export function decideUserProof(
  user: { id: number; login: string },
  account: InstalledAccount,
): string | undefined {
  if (user.id === account.id) return undefined;
  return `The GitHub token belongs to ${user.login}, but the App is installed on the account ${account.login}: present a token of ${account.login}.`;
}

/** Pure: whether a membership (`GET /user/memberships/orgs/{org}`) makes its user an owner. */
export function decideMembershipProof(
  membership: { role?: string; state?: string; organization?: { id?: number } },
  account: InstalledAccount,
): string | undefined {
  if (membership.organization?.id !== undefined && membership.organization.id !== account.id) {
    return `The GitHub token's membership is of another organization than ${account.login}.`;
  }
  if (membership.state !== "active") {
    return `The GitHub token's user has not accepted membership of ${account.login} (state ${membership.state ?? "unknown"}).`;
  }
  if (membership.role !== "admin") {
    return `The GitHub token's user is a ${membership.role ?? "non-owner"} of ${account.login}; linking its installation takes an owner (admin) of the organization.`;
  }
  return undefined;
}

function refusedToken(error: unknown, what: string): ApiError {
  const status = statusOf(error);
  if (status === 401) {
    return new ApiError(
      "forbidden",
      "GitHub refused the GitHub token (revoked, expired or not a token). Nothing was linked.",
    );
  }
  if (status === 403 || status === 404) {
    return new ApiError(
      "forbidden",
      `GitHub would not show ${what} to the GitHub token's user: it must be an owner of the account (a classic token also needs the read:org scope; a fine-grained one, the organization's Members permission). Nothing was linked.`,
    );
  }
  return new ApiError(
    "unavailable",
    "GitHub did not answer the check of the GitHub token. Nothing was linked; retry in a moment.",
  );
}

/** Refuses (403) unless the token's user controls `account`. */
export async function proveControl(user: GitHubClient, account: InstalledAccount): Promise<void> {
  let refusal: string | undefined;
  if (account.type === "User") {
    let answer;
    try {
      answer = await user.request("GET /user");
    } catch (error) {
      throw refusedToken(error, "who it is");
    }
    refusal = decideUserProof({ id: Number(answer.data.id), login: answer.data.login }, account);
  } else if (account.type === "Organization") {
    let answer;
    try {
      answer = await user.request("GET /user/memberships/orgs/{org}", { org: account.login });
    } catch (error) {
      throw refusedToken(error, `its membership of ${account.login}`);
    }
    refusal = decideMembershipProof(answer.data, account);
  } else {
    refusal = `The App is installed on ${account.type.toLowerCase()} ${account.login}: such installations are linked by the operator (mainline github link).`;
  }
  if (refusal !== undefined) throw new ApiError("forbidden", `${refusal} Nothing was linked.`);
}
