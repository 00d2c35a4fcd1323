/** The sign-in form: an API token becomes a session (ADR 0023). */
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
</form>`,
  };
}
