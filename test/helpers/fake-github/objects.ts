import type { components } from "@octokit/openapi-types";
import {
  fullName,
  type Account,
  type FakeApp,
  type Installation,
  type Repository,
} from "./model.js";

/**
 * GitHub's REST representations of the records every area shares (accounts, Apps, installations,
 * repositories), complete per GitHub's schemas: typed with `@octokit/openapi-types` so that a
 * missing required field fails the typecheck, and validated at run time by the schema guard.
 */

export type Schema<N extends keyof components["schemas"]> = components["schemas"][N];

/** Where the fake's API and its (pretend) web pages live. */
export class Urls {
  constructor(
    readonly api: string,
    readonly html: string,
  ) {}

  repo(repo: Repository): string {
    return `${this.api}/repos/${fullName(repo)}`;
  }

  repoHtml(repo: Repository): string {
    return `${this.html}/${fullName(repo)}`;
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** GitHub's node ids are opaque base64; this mimics the legacy `04:User1` shape. */
export function nodeId(kind: string, id: number): string {
  const prefix: Record<string, string> = {
    User: "04",
    Organization: "012",
    Bot: "03",
    Repository: "010",
    PullRequest: "011",
    Integration: "011",
    Installation: "015",
  };
  return Buffer.from(`${prefix[kind] ?? "0"}:${kind}${id}`).toString("base64");
}

export function simpleUser(urls: Urls, account: Account): Schema<"simple-user"> {
  // Bots' logins (`mainline[bot]`) are percent-encoded in URLs, as GitHub encodes them.
  const users = `${urls.api}/users/${encodeURIComponent(account.login)}`;
  return {
    login: account.login,
    id: account.id,
    node_id: account.nodeId,
    avatar_url: `${urls.html}/avatars/u/${account.id}?v=4`,
    gravatar_id: "",
    url: account.type === "Organization" ? `${urls.api}/orgs/${account.login}` : users,
    html_url:
      account.type === "Bot"
        ? `${urls.html}/apps/${encodeURIComponent(account.login.replace(/\[bot\]$/, ""))}`
        : `${urls.html}/${account.login}`,
    followers_url: `${users}/followers`,
    following_url: `${users}/following{/other_user}`,
    gists_url: `${users}/gists{/gist_id}`,
    starred_url: `${users}/starred{/owner}{/repo}`,
    subscriptions_url: `${users}/subscriptions`,
    organizations_url: `${users}/orgs`,
    repos_url:
      account.type === "Organization"
        ? `${urls.api}/orgs/${account.login}/repos`
        : `${users}/repos`,
    events_url: `${users}/events{/privacy}`,
    received_events_url: `${users}/received_events`,
    type: account.type,
    site_admin: false,
    user_view_type: "public",
  };
}

export function privateUser(urls: Urls, account: Account): Schema<"private-user"> {
  return {
    ...simpleUser(urls, account),
    name: account.name,
    company: null,
    blog: "",
    location: null,
    email: account.email,
    hireable: null,
    bio: null,
    twitter_username: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: account.createdAt,
    updated_at: account.createdAt,
    private_gists: 0,
    total_private_repos: 0,
    owned_private_repos: 0,
    disk_usage: 0,
    collaborators: 0,
    two_factor_authentication: true,
  };
}

export function organizationSimple(urls: Urls, org: Account): Schema<"organization-simple"> {
  const base = `${urls.api}/orgs/${org.login}`;
  return {
    login: org.login,
    id: org.id,
    node_id: org.nodeId,
    url: base,
    repos_url: `${base}/repos`,
    events_url: `${base}/events`,
    hooks_url: `${base}/hooks`,
    issues_url: `${base}/issues`,
    members_url: `${base}/members{/member}`,
    public_members_url: `${base}/public_members{/member}`,
    avatar_url: `${urls.html}/avatars/u/${org.id}?v=4`,
    description: null,
  };
}

export function integration(urls: Urls, app: FakeApp): Schema<"integration"> {
  return {
    id: app.id,
    slug: app.slug,
    client_id: app.clientId,
    node_id: app.nodeId,
    owner: simpleUser(urls, app.owner),
    name: app.name,
    description: null,
    external_url: `${urls.html}/apps/${app.slug}`,
    html_url: `${urls.html}/apps/${app.slug}`,
    created_at: app.createdAt,
    updated_at: app.createdAt,
    permissions: app.permissions,
    events: app.events,
    installations_count: 0,
  };
}

export function installation(urls: Urls, inst: Installation): Schema<"installation"> {
  return {
    id: inst.id,
    account: simpleUser(urls, inst.account),
    repository_selection: inst.repositorySelection,
    access_tokens_url: `${urls.api}/app/installations/${inst.id}/access_tokens`,
    repositories_url: `${urls.api}/installation/repositories`,
    html_url:
      inst.account.type === "Organization"
        ? `${urls.html}/organizations/${inst.account.login}/settings/installations/${inst.id}`
        : `${urls.html}/settings/installations/${inst.id}`,
    app_id: inst.app.id,
    app_slug: inst.app.slug,
    client_id: inst.app.clientId,
    target_id: inst.account.id,
    target_type: inst.account.type,
    permissions: inst.permissions,
    events: inst.events,
    created_at: inst.createdAt,
    updated_at: inst.updatedAt,
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_by: null,
    suspended_at: inst.suspendedAt,
  };
}

/** The repository's `permissions` as seen by the viewer (a role name mapped to GitHub's flags). */
export function viewerPermissions(
  role: string | undefined,
): NonNullable<Schema<"full-repository">["permissions"]> {
  const rank = ["read", "triage", "write", "maintain", "admin"].indexOf(role ?? "read");
  return {
    pull: rank >= 0,
    triage: rank >= 1,
    push: rank >= 2,
    maintain: rank >= 3,
    admin: rank >= 4,
  };
}

export function repository(
  urls: Urls,
  repo: Repository,
  viewerRole?: string,
): Schema<"full-repository"> {
  const api = urls.repo(repo);
  const html = urls.repoHtml(repo);
  const name = fullName(repo);
  // GitHub counts open issues and pull requests together.
  const openIssues = [...repo.pulls.values(), ...repo.issues.values()].filter(
    (p) => p.state === "open",
  ).length;
  return {
    id: repo.id,
    node_id: repo.nodeId,
    name: repo.name,
    full_name: name,
    owner: simpleUser(urls, repo.owner),
    private: repo.private,
    html_url: html,
    description: repo.description,
    fork: repo.parent !== null,
    url: api,
    archive_url: `${api}/{archive_format}{/ref}`,
    assignees_url: `${api}/assignees{/user}`,
    blobs_url: `${api}/git/blobs{/sha}`,
    branches_url: `${api}/branches{/branch}`,
    collaborators_url: `${api}/collaborators{/collaborator}`,
    comments_url: `${api}/comments{/number}`,
    commits_url: `${api}/commits{/sha}`,
    compare_url: `${api}/compare/{base}...{head}`,
    contents_url: `${api}/contents/{+path}`,
    contributors_url: `${api}/contributors`,
    deployments_url: `${api}/deployments`,
    downloads_url: `${api}/downloads`,
    events_url: `${api}/events`,
    forks_url: `${api}/forks`,
    git_commits_url: `${api}/git/commits{/sha}`,
    git_refs_url: `${api}/git/refs{/sha}`,
    git_tags_url: `${api}/git/tags{/sha}`,
    git_url: `git://127.0.0.1/${name}.git`,
    issue_comment_url: `${api}/issues/comments{/number}`,
    issue_events_url: `${api}/issues/events{/number}`,
    issues_url: `${api}/issues{/number}`,
    keys_url: `${api}/keys{/key_id}`,
    labels_url: `${api}/labels{/name}`,
    languages_url: `${api}/languages`,
    merges_url: `${api}/merges`,
    milestones_url: `${api}/milestones{/number}`,
    notifications_url: `${api}/notifications{?since,all,participating}`,
    pulls_url: `${api}/pulls{/number}`,
    releases_url: `${api}/releases{/id}`,
    ssh_url: `git@127.0.0.1:${name}.git`,
    stargazers_url: `${api}/stargazers`,
    statuses_url: `${api}/statuses/{sha}`,
    subscribers_url: `${api}/subscribers`,
    subscription_url: `${api}/subscription`,
    tags_url: `${api}/tags`,
    teams_url: `${api}/teams`,
    trees_url: `${api}/git/trees{/sha}`,
    clone_url: `${html}.git`,
    mirror_url: null,
    hooks_url: `${api}/hooks`,
    svn_url: html,
    homepage: null,
    language: null,
    forks_count: 0,
    forks: 0,
    stargazers_count: 0,
    watchers_count: 0,
    watchers: 0,
    size: 0,
    default_branch: repo.defaultBranch,
    open_issues_count: openIssues,
    open_issues: openIssues,
    is_template: false,
    topics: [],
    has_issues: repo.settings.hasIssues,
    has_projects: true,
    has_wiki: false,
    has_pages: false,
    has_downloads: true,
    has_discussions: false,
    archived: false,
    disabled: false,
    visibility: repo.private ? "private" : "public",
    pushed_at: repo.pushedAt,
    created_at: repo.createdAt,
    updated_at: repo.updatedAt,
    permissions: viewerPermissions(viewerRole),
    allow_rebase_merge: repo.settings.allowRebaseMerge,
    allow_squash_merge: repo.settings.allowSquashMerge,
    allow_merge_commit: repo.settings.allowMergeCommit,
    allow_auto_merge: false,
    delete_branch_on_merge: repo.settings.deleteBranchOnMerge,
    allow_update_branch: repo.settings.allowUpdateBranch,
    use_squash_pr_title_as_default: false,
    squash_merge_commit_title: "COMMIT_OR_PR_TITLE",
    squash_merge_commit_message: "COMMIT_MESSAGES",
    merge_commit_title: "MERGE_MESSAGE",
    merge_commit_message: "PR_TITLE",
    allow_forking: true,
    web_commit_signoff_required: false,
    license: null,
    network_count: 0,
    subscribers_count: 0,
    ...(repo.owner.type === "Organization" ? { organization: simpleUser(urls, repo.owner) } : {}),
    ...(repo.parent !== null
      ? {
          parent: repositoryShort(urls, repo.parent),
          source: repositoryShort(urls, repo.parent),
        }
      : {}),
  };
}

/** The `minimal-repository` schema (check suites, combined statuses): the same fields. */
export function minimalRepository(urls: Urls, repo: Repository): Schema<"minimal-repository"> {
  return repositoryShort(urls, repo) as unknown as Schema<"minimal-repository">;
}

/** The `repository` schema (lists), which full-repository's fields cover. */
export function repositoryShort(urls: Urls, repo: Repository): Schema<"repository"> {
  const full: Partial<Schema<"full-repository">> = repository(urls, repo);
  delete full.network_count;
  delete full.subscribers_count;
  delete full.organization;
  delete full.parent;
  delete full.source;
  return full as Schema<"repository">;
}
