/** The sign-in form: an API token becomes a session. */
import { HOUR_MS } from "../../lib/time.js";
import type { SessionLifetimes } from "../../organizations/sessions.js";
import { markup } from "../html.js";
import type { PageView } from "../layout.js";
import { urls } from "../urls.js";

export interface SignInView {
  /** The form's anti-forgery token (the same value as its cookie). */
  csrf: string;
  /** Where to go once signed in (a path of this server). */
  next: string | undefined;
  /** Why the last attempt failed. */
  problem?: string | undefined;
  lifetimes: SessionLifetimes;
  /** Offer "Sign in with GitHub" (the server has the App's OAuth credentials). */
  github?: boolean | undefined;
}

/** An organization a GitHub user may enter, signed for the chooser's form. */
export interface GitHubChoiceView {
  organizationSlug: string;
  accountLogin: string;
  /** The signed choice the form posts back. */
  value: string;
}

/** Several organizations: the user picks one. */
export function renderGitHubChooser(view: {
  login: string;
  choices: GitHubChoiceView[];
  next: string | undefined;
}): PageView {
  const next = view.next ? markup`<input type="hidden" name="next" value="${view.next}">` : "";
  const chooseUrl = `${urls.signIn()}/github/choose`;
  const items = view.choices.map(
    (c) => markup`<li><form method="post" action="${chooseUrl}">${next}
  <input type="hidden" name="choice" value="${c.value}">
  <button class="primary" type="submit">${c.organizationSlug}</button> through the installation on <strong>${c.accountLogin}</strong>
</form></li>`,
  );
  return {
    title: "Choose an organization",
    main: markup`<h1>Choose an organization</h1>
<p>Signed in to GitHub as <strong>${view.login}</strong>. Installations you can reach are linked to several organizations here; choose the one to enter.</p>
<ul class="github-choices">${items}</ul>`,
  };
}

function hours(ms: number): string {
  const h = Math.round(ms / HOUR_MS);
  return h % 24 === 0 && h >= 48 ? `${h / 24} days` : h === 1 ? "an hour" : `${h} hours`;
}

export function renderSignIn(view: SignInView): PageView {
  const problem = view.problem
    ? markup`<p class="error" role="alert" id="sign-in-problem">${view.problem}</p>`
    : "";
  const next = view.next ? markup`<input type="hidden" name="next" value="${view.next}">` : "";
  const githubHref = `${urls.signIn()}/github${view.next ? `?next=${encodeURIComponent(view.next)}` : ""}`;
  return {
    title: "Sign in",
    main: markup`<h1>Sign in to Mainline</h1>
<p>Sign in with an API token of your organization (<code>mainline token create --org &lt;slug&gt;</code>
prints one). Your browser keeps only a random session id, never the token. The session ends when you
sign out, after ${hours(view.lifetimes.idleMs)} without use, or after ${hours(view.lifetimes.absoluteMs)} at the latest.</p>
${problem}
<form class="stacked" method="post" action="${urls.signIn()}">
  <input type="hidden" name="csrf" value="${view.csrf}">${next}
  <label for="token">API token</label>
  <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required${view.problem ? markup` aria-describedby="sign-in-problem"` : ""}>
  <button class="primary" type="submit">Sign in</button>
</form>${
      view.github
        ? markup`
<p>Or <a class="button" id="sign-in-github" href="${githubHref}">Sign in with GitHub</a>: for organizations whose GitHub App installation you can reach.</p>`
        : ""
    }`,
  };
}
