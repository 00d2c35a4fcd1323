/** A linked id that is an http(s) URL is the link; otherwise the repository's base URL + id. */
export function ticketUrl(ticket: string, ticketBaseUrl: string | null): string | null {
  if (/^https?:\/\//i.test(ticket)) return ticket;
  return ticketBaseUrl === null ? null : `${ticketBaseUrl}${ticket}`;
}
