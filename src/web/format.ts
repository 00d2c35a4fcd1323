/**
 * Text formats the pages share: percentages, ages, durations, times (all UTC), queue names. Every
 * time a page shows is a `<time>` with its instant in `datetime` and its full timestamp as title.
 */
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

/**
 * A table wider than a narrow screen scrolls sideways inside this box, not the page; the box
 * can take the keyboard's focus (arrow keys scroll it) and is named for it.
 */
export function scrollX(label: string, table: SafeHtml): SafeHtml {
  return markup`<div class="scroll-x" role="region" aria-label="${label}" tabindex="0">${table}</div>`;
}

/** `2026-11-27 12:04:05 UTC`: the full instant, as a time's hover text shows it. */
export function fullTimestamp(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/**
 * A moment as the pages show it: `12:04 UTC` on the day of `now`, else with its date,
 * `2026-11-27 12:04 UTC`; in a `<time>` whose `datetime` is the instant and whose title (the
 * hover text) the full timestamp.
 */
export function clockTime(ms: number, now: number): SafeHtml {
  const iso = new Date(ms).toISOString();
  const sameDay = iso.slice(0, 10) === new Date(now).toISOString().slice(0, 10);
  const shown = `${sameDay ? iso.slice(11, 16) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`} UTC`;
  return markup`<time datetime="${iso}" title="${fullTimestamp(ms)}">${shown}</time>`;
}

/** `in 4 min`, `3 min ago`, `now`: a moment relative to `now`, in a `<time>` like `clockTime`'s. */
export function relativeTime(ms: number, now: number): SafeHtml {
  const delta = ms - now;
  // Seconds count (a run of a few seconds ends "in 4 s", not "now"); under five is now.
  const shown =
    delta > 0 && delta < 5_000
      ? "in a few seconds"
      : Math.abs(delta) < 5_000
        ? "now"
        : delta > 0
          ? `in ${formatSpan(delta)}`
          : `${formatSpan(-delta)} ago`;
  return markup`<time datetime="${new Date(ms).toISOString()}" title="${fullTimestamp(ms)}">${shown}</time>`;
}

/** `4 min`, `1 h 10 min`, `12 s`, `3 days`; `under 1 s` for a moment, `0 s` for none. */
export function formatSpan(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds === 0 && ms > 0) return "under 1 s";
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.round(hours / 24)} days`;
}

/** A UTC time with its age: `<time>` carries the exact instant. */
export function timeAgo(iso: string, now: number): SafeHtml {
  const shown = iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
  const at = Date.parse(iso);
  const title = Number.isFinite(at) ? fullTimestamp(at) : iso;
  return markup`<time datetime="${iso}" title="${title}">${shown}</time> <span class="muted">(${formatAge(iso, now)})</span>`;
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
