/**
 * Whether GitHub is answering at all, as this server sees it. Octokit tries a failed request three
 * more times (after 1, 4 and 9 s): right for a passing 5xx, slow when GitHub is down, since every
 * request of a queue's step then takes 14 s to fail and a step makes several. Once as many
 * attempts in a row as one request makes have failed (a 5xx or no answer), requests are not tried
 * again until one gets an answer: the step fails at once, the queue says its host is unreachable
 * and retries it with its own backoff. Any answer that is not a 5xx ends it.
 */
export class OutageBreaker {
  private failuresInRow = 0;

  /** `threshold`: failed attempts in a row that make an outage (one request and its retries). */
  constructor(private readonly threshold: number) {}

  /** GitHub seems down: requests get no retries of their own. */
  get open(): boolean {
    return this.failuresInRow >= this.threshold;
  }

  /** An attempt's outcome: an HTTP status, or none (no answer, a timeout). */
  record(status: number | undefined): void {
    if (status === undefined || status >= 500) this.failuresInRow += 1;
    else this.failuresInRow = 0;
  }

  /** `fetch`, recording each attempt's outcome. */
  wrap(send: typeof fetch): typeof fetch {
    return async (input, init) => {
      let response: Response;
      try {
        response = await send(input, init);
      } catch (error) {
        this.record(undefined);
        throw error;
      }
      this.record(response.status);
      return response;
    };
  }
}
