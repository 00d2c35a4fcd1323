/**
 * The GitHub App Mainline needs, as GitHub's App manifest and as the registration link that fills
 * GitHub's "New GitHub App" form with it (`mainline github setup`). Trunk's App asks for the same
 * permissions and events, so repositories move from Trunk without new permissions.
 */

/** Permissions, as the manifest names them, with why Mainline needs each. */
export const APP_PERMISSIONS = {
  actions: { access: "write", why: "read workflow runs; re-run or cancel the runs it started" },
  administration: {
    access: "read",
    why: "read branch protection and rulesets: the required checks and reviews",
  },
  checks: { access: "write", why: "read check runs on tested commits; post the queue's own check" },
  contents: {
    access: "write",
    why: "read .mainline.yml and .trunk/trunk.yaml; create test branches; fast-forward merges",
  },
  issues: {
    access: "write",
    why: "the queue's comment on a pull request (PR comments are issue comments)",
  },
  metadata: { access: "read", why: "required of every App: repository names and ids" },
  pull_requests: { access: "write", why: "read pull requests and their mergeability; merge them" },
  statuses: { access: "write", why: "read commit statuses of CI systems; post the queue's status" },
  workflows: {
    access: "write",
    why: "merge pull requests that change .github/workflows (GitHub refuses them otherwise)",
  },
} as const;

/** Events the App subscribes to, with why. `installation` and `installation_repositories` are
 * not among them: GitHub sends them to every App and refuses them in a manifest. */
export const APP_EVENTS = {
  pull_request: "opened, pushed to, closed, retargeted, drafted, labeled: the queue reads it again",
  issue_comment: "comment commands (/trunk merge, /mainline merge)",
  pull_request_review: "reviews change whether a pull request may merge",
  check_run: "CI results on tested commits",
  check_suite: "CI results on tested commits",
  status: "CI results from systems that post commit statuses",
  push: "the target branch moved: what is being tested is rebuilt",
  repository: "renamed, transferred, deleted: the organization's repositories follow",
  branch_protection_rule: "required checks changed",
  repository_ruleset: "required checks changed",
} as const;

/** Events GitHub delivers to every App without a subscription. */
export const ALWAYS_DELIVERED_EVENTS = ["installation", "installation_repositories"] as const;

export interface AppManifest {
  name: string;
  url: string;
  description: string;
  public: boolean;
  hook_attributes: { url: string; active: boolean };
  /** Where GitHub sends a browser back after "Sign in with GitHub". */
  callback_urls: string[];
  /** No OAuth at installation: signing in is a separate, later step. */
  request_oauth_on_install: boolean;
  default_permissions: Record<string, string>;
  default_events: string[];
}

export function webhookUrl(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/webhooks/github`;
}

/** The callback URL of "Sign in with GitHub", to register in the App's settings. */
export function signInCallbackUrl(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/sign-in/github/callback`;
}

/** GitHub's App manifest for a Mainline reachable at `publicUrl`. */
export function appManifest(options: { name: string; publicUrl: string }): AppManifest {
  return {
    name: options.name,
    url: options.publicUrl,
    description:
      "Mainline: a merge queue and test health for this account's repositories (self-hosted).",
    public: false,
    hook_attributes: { url: webhookUrl(options.publicUrl), active: true },
    callback_urls: [signInCallbackUrl(options.publicUrl)],
    request_oauth_on_install: false,
    default_permissions: Object.fromEntries(
      Object.entries(APP_PERMISSIONS).map(([name, { access }]) => [name, access]),
    ),
    default_events: Object.keys(APP_EVENTS),
  };
}

/** The web address of a GitHub API base URL (`https://api.github.com` → `https://github.com`). */
export function webUrlOf(apiUrl: string): string {
  const url = new URL(apiUrl);
  const path = url.pathname.replace(/\/+$/, "");
  if (path === "/api/v3") return url.origin;
  if (url.hostname.startsWith("api.")) return `${url.protocol}//${url.host.slice("api.".length)}`;
  return url.origin;
}

/**
 * The link that opens GitHub's "Register new GitHub App" form filled in from the manifest (for a
 * GitHub organization when `organization` is given, else the signed-in user). The webhook secret
 * is the one field GitHub does not take from a link: it is typed in the form.
 */
export function registrationUrl(
  webUrl: string,
  manifest: AppManifest,
  organization?: string,
): string {
  const base = organization
    ? `${webUrl}/organizations/${encodeURIComponent(organization)}/settings/apps/new`
    : `${webUrl}/settings/apps/new`;
  const query = new URLSearchParams();
  query.set("name", manifest.name);
  query.set("description", manifest.description);
  query.set("url", manifest.url);
  query.set("public", String(manifest.public));
  query.set("webhook_active", "true");
  query.set("webhook_url", manifest.hook_attributes.url);
  for (const url of manifest.callback_urls) query.append("callback_urls[]", url);
  query.set("request_oauth_on_install", String(manifest.request_oauth_on_install));
  for (const [permission, access] of Object.entries(manifest.default_permissions)) {
    query.set(permission, access);
  }
  for (const event of manifest.default_events) query.append("events[]", event);
  return `${base}?${query.toString()}`;
}
