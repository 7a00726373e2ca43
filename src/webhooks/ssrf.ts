// SSRF guard for webhook URLs (docs/webhooks.md): only http(s); unless ALLOW_PRIVATE_WEBHOOKS,
// no loopback, private, link-local or otherwise non-public address — checked when the URL is
// registered and again when each attempt connects (the DNS answer may have changed since).
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';

// Ranges come from ipaddr.js (maintained with the IANA special-purpose registries): an address is
// public only when its range is plain 'unicast'.
const WELL_KNOWN_NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

const ipv4Of = (hi: number, lo: number): ipaddr.IPv4 => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

/**
 * The IPv4 address an IPv6 form reaches: IPv4-mapped, IPv4-compatible, well-known NAT64 (its
 * translator connects to it) and 6to4 (a relay does). Local-use NAT64 (64:ff9b:1::/48) has no
 * fixed place for it and stays non-public as a whole.
 */
function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = a.parts as number[];
  const range = a.range();
  if (range === 'ipv4Mapped' || a.match(WELL_KNOWN_NAT64) || (range === 'unicast' && a.match(IPV4_COMPATIBLE)))
    return ipv4Of(p[6] as number, p[7] as number);
  if (range === '6to4') return ipv4Of(p[1] as number, p[2] as number);
  return null;
}

/** True for addresses a webhook must never reach in production. */
export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 0) return true;
  const a = ipaddr.parse(ip);
  if (a.kind() === 'ipv4') return a.range() !== 'unicast';
  const v4 = embeddedIPv4(a as ipaddr.IPv6);
  return (v4 ?? a).range() !== 'unicast';
}

/** Parses a webhook URL: http or https only (400 otherwise). */
export function parseWebhookUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid(['url'], textFor('webhook_url_scheme'));
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid(['url'], textFor('webhook_url_scheme'));
  return u;
}

const bareHost = (u: URL): string => u.hostname.replace(/^\[(.*)\]$/, '$1');

function lookupAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });
}

/** At registration: refuses URLs whose host is, or resolves to, a non-public address. */
export async function assertPublicUrl(u: URL): Promise<void> {
  const host = bareHost(u);
  if (isIP(host)) {
    if (isPrivateAddress(host)) throw invalid(['url'], textFor('webhook_url_private'));
    return;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await lookupAll(host);
  } catch {
    throw invalid(['url'], textFor('webhook_url_unresolvable'));
  }
  if (addresses.length === 0) throw invalid(['url'], textFor('webhook_url_unresolvable'));
  if (addresses.some((a) => isPrivateAddress(a.address))) throw invalid(['url'], textFor('webhook_url_private'));
}

/** At delivery: an IP-literal host that is not public. (Names are checked by `publicOnlyLookup`.) */
export const isPrivateLiteral = (u: URL): boolean => {
  const host = bareHost(u);
  return isIP(host) !== 0 && isPrivateAddress(host);
};

export class PrivateAddressError extends Error {
  readonly code = 'EPRIVATEADDRESS';
  constructor(host: string) {
    super(`${host} resolves to a private or local address (SSRF guard)`);
  }
}

type LookupCb = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for the HTTP agent's sockets: resolves, then refuses the connection when any answer
 * is not public, so the checked address is the one connected to (no DNS-rebinding window).
 */
export function publicOnlyLookup(hostname: string, options: LookupAllOptions | number | object, cb: LookupCb): void {
  const opts = typeof options === 'object' ? (options as { all?: boolean; family?: number }) : { family: options };
  dnsLookup(hostname, { ...opts, all: true } as LookupAllOptions, (err, addresses) => {
    if (err) return cb(err, '');
    if (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address))) return cb(new PrivateAddressError(hostname), '');
    if (opts.all) return cb(null, addresses);
    const first = addresses[0] as LookupAddress;
    cb(null, first.address, first.family);
  });
}
