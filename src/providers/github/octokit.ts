/** Octokit with the plugins every Mainline client has: throttling as GitHub asks, and retries. */
import { Octokit } from "@octokit/core";
import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";

export const GitHubOctokit = Octokit.plugin(throttling, retry);
export type GitHubClient = InstanceType<typeof GitHubOctokit>;
