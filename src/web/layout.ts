/**
 * The page around every view: landmarks (`header`, `nav`, `main`, `footer`), a skip link, the
 * page title, breadcrumbs, the organization and sign-out in the header, and the navigation to
 * Tests, Merge queues, Uploads and Webhooks. Views give a `PageView`; this adds the rest.
 */
import type { IslandName } from "./assets/build.js";
import type { AssetCatalog } from "./assets/catalog.js";
import { markup, type SafeHtml } from "./html.js";
import { urls } from "./urls.js";

/** The navigation's sections; a page names the one it belongs to. */
export type Section = "home" | "tests" | "queues" | "uploads" | "webhooks";

export interface Crumb {
  label: string;
  /** Absent for the current page (the last crumb). */
  href?: string | undefined;
}

/** What a page hands the layout. */
export interface PageView {
  /** `<title>`: the page's own words; " · Mainline" is added. */
  title: string;
  section?: Section | undefined;
  /** The trail after the organization (which the layout adds first when signed in). */
  breadcrumbs?: readonly Crumb[];
  /** The page's content, starting with its `<h1>`. */
  main: SafeHtml;
  /** Scripts that enhance the page (it works without them). */
  islands?: readonly IslandName[];
}

/** Who is looking: their organization, and the sign-out form's anti-forgery token. */
export interface Chrome {
  orgSlug?: string | undefined;
  /** With a session: the sign-out form is shown. */
  csrf?: string | undefined;
  assets: AssetCatalog;
}

const SECTIONS: readonly { section: Section; label: string; href: (org: string) => string }[] = [
  { section: "tests", label: "Tests", href: urls.tests },
  { section: "queues", label: "Merge queues", href: urls.queues },
  { section: "uploads", label: "Uploads", href: (org) => urls.uploads(org) },
  { section: "webhooks", label: "Webhooks", href: (org) => urls.webhooks(org) },
];

function header(view: PageView, chrome: Chrome): SafeHtml {
  const org = chrome.orgSlug;
  const nav = org
    ? markup`<nav class="site-nav" aria-label="Main"><ul>${SECTIONS.map(
        (s) =>
          markup`<li><a href="${s.href(org)}"${view.section === s.section ? markup` aria-current="page"` : ""}>${s.label}</a></li>`,
      )}</ul></nav>`
    : "";
  const signOut = chrome.csrf
    ? markup`<form method="post" action="${urls.signOut()}"><input type="hidden" name="csrf" value="${chrome.csrf}"><button type="submit">Sign out</button></form>`
    : "";
  const account = org
    ? markup`<div class="account"><span>Organization <strong>${org}</strong></span>${signOut}</div>`
    : "";
  return markup`<header class="site-header"><div class="bar"><a class="brand" href="${org ? urls.home(org) : urls.root()}">Mainline</a>${nav}${account}</div></header>`;
}

function breadcrumbs(view: PageView, chrome: Chrome): SafeHtml {
  const trail: Crumb[] = [
    ...(chrome.orgSlug ? [{ label: chrome.orgSlug, href: urls.home(chrome.orgSlug) }] : []),
    ...(view.breadcrumbs ?? []),
  ];
  if (trail.length === 0) return markup``;
  const last = trail.length - 1;
  const items = trail.map((crumb, i) =>
    i === last || crumb.href === undefined
      ? markup`<li${i === last ? markup` aria-current="page"` : ""}>${crumb.label}</li>`
      : markup`<li><a href="${crumb.href}">${crumb.label}</a></li>`,
  );
  return markup`<nav class="breadcrumbs" aria-label="Breadcrumb"><ol>${items}</ol></nav>`;
}

/** The whole document. */
export function renderDocument(view: PageView, chrome: Chrome): string {
  const { styles, scripts } = chrome.assets.pageAssets(view.islands ?? []);
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<meta name="referrer" content="no-referrer">
<title>${view.title} · Mainline</title>
<link rel="icon" href="data:,">
${styles.map((href) => markup`<link rel="stylesheet" href="${href}">\n`)}${scripts.map((src) => markup`<script defer src="${src}"></script>\n`)}</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
${header(view, chrome)}
${breadcrumbs(view, chrome)}
<main id="main" tabindex="-1">
${view.main}
</main>
<footer class="site-footer">Mainline · test health and merge queue</footer>
</body>
</html>
`.value;
}
