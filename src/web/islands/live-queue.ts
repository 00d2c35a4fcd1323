/**
 * Island: keeps a queue page current without a reload. The page's live region
 * (`[data-live-events]`) names the queue's event stream; on each `change` the island fetches the
 * page again and swaps in the new region, then says when in the polite status line. While the
 * region says `data-refresh-ms` (it shows times relative to now: a run's elapsed time, estimates)
 * it is also fetched again that long after the last fetch, while the page is visible, so that
 * those words never freeze. Without JavaScript the page is complete as served (reload to refresh).
 */
const region = document.querySelector<HTMLElement>("[data-live-events]");
const status = document.querySelector<HTMLElement>("[data-live-status]");

function say(text: string): void {
  if (status) status.textContent = text;
}

function time(): string {
  return new Date().toISOString().slice(11, 19) + " UTC";
}

if (region && region.id && typeof EventSource !== "undefined") {
  const source = new EventSource(region.dataset.liveEvents ?? "");
  let fetching = false;
  let again = false;
  let tick: ReturnType<typeof setTimeout> | undefined;
  let due = false;
  let stopped = false;

  const stop = (text: string): void => {
    say(text);
    stopped = true;
    clearTimeout(tick);
    source.close();
  };

  // The next refresh of relative times, when the region asks for one.
  const schedule = (): void => {
    clearTimeout(tick);
    due = false;
    const ms = Number(region.dataset.refreshMs ?? "");
    if (stopped || !Number.isFinite(ms) || ms <= 0) return;
    tick = setTimeout(() => {
      // Only the times moved on: no need to tell a screen reader.
      if (document.visibilityState === "visible") void refresh(true);
      else due = true;
    }, ms);
  };

  const refresh = async (quiet = false): Promise<void> => {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    try {
      const answer = await fetch(window.location.href, {
        headers: { accept: "text/html" },
        credentials: "same-origin",
      });
      if (!answer.ok) return;
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const next = page.getElementById(region.id);
      if (!next) {
        // Signed out meanwhile: the answer was the sign-in page.
        stop("Live updates stopped: reload the page.");
        return;
      }
      // Keyboard users keep their place: the link focused before is focused again after.
      const focused = document.activeElement;
      const href =
        focused instanceof HTMLAnchorElement && region.contains(focused)
          ? focused.getAttribute("href")
          : null;
      region.replaceChildren(...Array.from(next.childNodes));
      if (href !== null) {
        const again = Array.from(region.querySelectorAll("a")).find(
          (a) => a.getAttribute("href") === href,
        );
        again?.focus();
      }
      region.dataset.version = next.dataset.version ?? "";
      if (next.dataset.refreshMs === undefined) delete region.dataset.refreshMs;
      else region.dataset.refreshMs = next.dataset.refreshMs;
      if (!quiet) say(`Live: updated at ${time()}`);
    } catch {
      say("Live updates interrupted; retrying.");
    } finally {
      fetching = false;
      if (again) {
        again = false;
        void refresh();
      } else schedule();
    }
  };

  schedule();
  document.addEventListener("visibilitychange", () => {
    if (due && document.visibilityState === "visible") void refresh(true);
  });

  source.addEventListener("ready", (event) => {
    say("Live: following the queue.");
    // Changes made while the page loaded (or while disconnected) are fetched now.
    if ((event as MessageEvent<string>).data !== region.dataset.version) void refresh();
  });
  source.addEventListener("change", () => void refresh());
  source.addEventListener("gone", () => {
    stop("This queue no longer exists.");
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CONNECTING)
      say("Live updates interrupted; reconnecting.");
  });
}

export {};
