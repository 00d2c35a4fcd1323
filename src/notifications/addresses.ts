/**
 * Where an endpoint may point (SSRF): http(s) only, not this service, and, unless allowed, not a
 * loopback, private, link-local, unique-local or unspecified address. Checked on the URL when an
 * endpoint is saved and on every resolved address before a delivery connects.
 */
import { BlockList, isIP } from "node:net";

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  PRIVATE.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  PRIVATE.addSubnet(network, prefix, "ipv6");
}

/** Whether an IP address is loopback, private, link-local, unspecified or otherwise internal. */
export function isInternalAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "");
  const family = isIP(bare);
  if (family === 4) return PRIVATE.check(bare, "ipv4");
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
    if (mapped?.[1]) return PRIVATE.check(mapped[1], "ipv4");
    return PRIVATE.check(bare, "ipv6");
  }
  return false;
}

export interface AddressPolicy {
  /** MAINLINE_WEBHOOKS_ALLOW_PRIVATE: internal addresses are allowed. */
  allowPrivate: boolean;
  /** This service's own origins (its public URL, the address it listens on). */
  selfOrigins: () => readonly string[];
}

/** Why `text` may not be an endpoint's URL; undefined when it may. */
export function urlRefusal(text: string, policy: AddressPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute http(s) URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http(s) URL";
  if (url.username !== "" || url.password !== "") return "may not carry a user name or password";
  if (text.length > 2000) return "must be at most 2000 characters long";
  if (policy.selfOrigins().some((origin) => sameOrigin(origin, url))) {
    return "may not point at this Mainline service";
  }
  // "localhost." is localhost: a fully qualified name's final dot is dropped first.
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  const internal =
    host === "localhost" || host.endsWith(".localhost") || isInternalAddress(url.hostname);
  if (internal && !policy.allowPrivate) {
    return "may not point at a loopback, private or link-local address (MAINLINE_WEBHOOKS_ALLOW_PRIVATE=1 allows it)";
  }
  return undefined;
}

function sameOrigin(origin: string, url: URL): boolean {
  try {
    const self = new URL(origin);
    const local = (host: string) =>
      host === "localhost" || host === "127.0.0.1" || host === "[::1]" || host === "0.0.0.0";
    const hostsMatch =
      self.hostname === url.hostname || (local(self.hostname) && local(url.hostname));
    return hostsMatch && portOf(self) === portOf(url);
  } catch {
    return false;
  }
}

function portOf(url: URL): string {
  if (url.port !== "") return url.port;
  return url.protocol === "https:" ? "443" : "80";
}
