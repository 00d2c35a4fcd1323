/**
 * The provider registry: every git host this server can connect, and everything that dispatches
 * on a repository's host reads it (the merge queue's git host and CI, createQueue's repository
 * lookup, submissions' stored pull requests, routes, start and stop).
 */
import type { ApiApp } from "../api/types.js";
import { CiRouter, GitHostRouter } from "../mergequeue/host-router.js";
import type { RepoConfigSource } from "../mergequeue/config-check.js";
import type { CiProvider, GitHost } from "../mergequeue/providers.js";
import type { StoredPullRequestLookup } from "../mergequeue/pull-request-service.js";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import type {
  HostProvider,
  ProviderContext,
  ProviderRegistration,
} from "../providers/host-provider.js";
import { githubProvider } from "../providers/github/index.js";
import { gitlabProvider } from "../providers/gitlab/index.js";
import { localProvider } from "../providers/local/index.js";

/** The registered hosts, in start order (stopped in reverse). A new host is one line here. */
export const PROVIDERS = {
  local: localProvider,
  github: githubProvider,
  gitlab: gitlabProvider,
} satisfies Record<string, ProviderRegistration<never, HostProvider | undefined>>;

type Registry = typeof PROVIDERS;

/** Each registered host's provider, by its registry name (undefined: not configured). */
export type HostProviders = { [Host in keyof Registry]: ReturnType<Registry[Host]["create"]> };

type Intersection<Union> = (Union extends unknown ? (part: Union) => void : never) extends (
  all: infer All,
) => void
  ? All
  : never;

/** The options of every registered host, as one object (part of the service options). */
export type ProviderOptions = Intersection<
  { [Host in keyof Registry]: Parameters<Registry[Host]["create"]>[1] }[keyof Registry]
>;

/** The registered hosts' providers, and the connected ones in start order. */
export interface ConnectedProviders {
  byName: HostProviders;
  connected: readonly HostProvider[];
}

export function connectProviders(
  context: ProviderContext,
  options: ProviderOptions,
): ConnectedProviders {
  const byName = Object.fromEntries(
    Object.entries(PROVIDERS).map(([name, registration]) => [
      name,
      registration.create(context, options),
    ]),
  ) as HostProviders;
  const connected = Object.values(byName).filter(
    (provider): provider is NonNullable<typeof provider> => provider !== undefined,
  );
  return { byName, connected };
}

/** How the services reach a repository's host: one entry per connected provider. */
export interface HostDispatch {
  gitHost: GitHostRouter;
  ci: CiRouter;
  existingRepositories: ReadonlyMap<
    string,
    (principal: Principal, ref: RepoRef) => Promise<Repository>
  >;
  storedPullRequest: StoredPullRequestLookup;
  /** The host's source for the configuration check, when its CI is the built-in runner. */
  configSource(host: string): RepoConfigSource | undefined;
}

/**
 * Routes each host to its provider; a host with none gets the fallback git host and CI when given
 * (tests and the simulator), else `host_not_connected`.
 */
export function hostDispatch(
  connected: readonly HostProvider[],
  fallback: { gitHost?: GitHost | undefined; ci?: CiProvider | undefined },
): HostDispatch {
  const byHost = new Map(connected.map((provider) => [provider.hostName.toLowerCase(), provider]));
  const each = <T>(part: (provider: HostProvider) => T) =>
    new Map([...byHost].map(([host, provider]) => [host, part(provider)]));
  return {
    gitHost: new GitHostRouter(
      each((provider) => provider.gitHost),
      fallback.gitHost,
    ),
    ci: new CiRouter(
      each((provider) => provider.ci),
      fallback.ci,
    ),
    existingRepositories: each(
      (provider) => (principal: Principal, ref: RepoRef) =>
        provider.existingRepository(principal, ref),
    ),
    storedPullRequest: (repo, number) =>
      byHost.get(repo.host.toLowerCase())?.storedPullRequest(repo, number) ?? null,
    configSource: (host) => byHost.get(host.toLowerCase())?.configSource,
  };
}

/** The hosts' routes on the authenticated scope; a host not connected answers with its own. */
export function providerRoutes(byName: HostProviders): ((scope: ApiApp) => void)[] {
  return Object.entries(PROVIDERS).map(([name, registration]) => (scope: ApiApp) => {
    const provider = byName[name as keyof Registry];
    if (provider) provider.routes(scope);
    else registration.unconnectedRoutes?.(scope);
  });
}

/** Where connected hosts deliver webhooks, each on a scope of its own. */
export function webhookRoutes(connected: readonly HostProvider[]): ((scope: ApiApp) => void)[] {
  return connected.flatMap((provider) =>
    provider.webhookRoutes ? [(scope: ApiApp) => provider.webhookRoutes?.(scope)] : [],
  );
}

/** Starts the connected providers' background work, in registry order. */
export async function startProviders(providers: readonly HostProvider[]): Promise<void> {
  for (const provider of providers) await provider.start();
}

/** Stops them in the reverse order (GitHub's webhook inbox before the local runner). */
export async function stopProviders(
  providers: readonly Pick<HostProvider, "stop">[],
): Promise<void> {
  for (const provider of [...providers].reverse()) await provider.stop();
}
