/** Text formats the pages share: percentages, ages, durations, times (all UTC). */
import { MINUTE_MS } from "../lib/time.js";
import { repositoryName, type RepoRef } from "../organizations/repositories.js";
import { markup, type SafeHtml } from "./html.js";

/** A merge queue as every page names it: `acme/calc · main`, `github.com/acme/app · main`. */
export function queueName(repo: RepoRef, branch: string): string {
  return `${repositoryName(repo)} · ${branch}`;
}

export function formatPercent(fraction: number): string {
  const percent = Math.round(fraction * 1000) / 10;
  return `${Number.isInteger(percent) ? percent.toFixed(0) : percent.toFixed(1)}%`;
}

export function formatAge(thenIso: string, now: number): string {
  const ms = now - Date.parse(thenIso);
  if (!Number.isFinite(ms)) return "";
  if (ms < MINUTE_MS) return "just now";
  const minutes = Math.floor(ms / MINUTE_MS);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}

export function formatDuration(ms: number | null): string {
  if (ms === null) return "";
  if (ms < 1000) return `${ms} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** A UTC time with its age: `<time>` carries the exact instant. */
export function timeAgo(iso: string, now: number): SafeHtml {
  const shown = iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
  return markup`<time datetime="${iso}" title="${iso}">${shown}</time> <span class="muted">(${formatAge(iso, now)})</span>`;
}

/** `1 test`, `3 tests`. */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

const BADGES = new Set([
  "healthy",
  "flaky",
  "broken",
  "quarantined",
  "passed",
  "failed",
  "skipped",
  "running",
  "paused",
  "draining",
  "switching_modes",
  "testing",
  "merged",
  "cancelled",
]);

/** A status shown as a word in a coloured pill: the word carries the meaning, colour helps. */
export function badge(kind: string, text: string): SafeHtml {
  return markup`<span class="badge ${BADGES.has(kind) ? kind : "other"}">${text}</span>`;
}

export const muted = (text: string): SafeHtml => markup`<span class="muted">${text}</span>`;
