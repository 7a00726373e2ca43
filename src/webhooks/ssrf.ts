// SSRF guard for webhook URLs (docs/webhooks.md): only http(s); unless ALLOW_PRIVATE_WEBHOOKS,
// no loopback, private, link-local or otherwise non-public address — checked when the URL is
// registered and again when each attempt connects (the DNS answer may have changed since).
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';

// Two lists: Node's BlockList matches IPv4 addresses against IPv4-mapped IPv6 rules too.
const blocked4 = new BlockList();
const blocked6 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const)
  blocked4.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['::ffff:0:0', 96], // IPv4-mapped: never needed to reach a public server
  ['64:ff9b::', 96], // NAT64 can reach private IPv4
] as const)
  blocked6.addSubnet(net, bits, 'ipv6');

/** True for addresses a webhook must never reach in production. */
export function isPrivateAddress(ip: string): boolean {
  const v = isIP(ip);
  if (v === 4) return blocked4.check(ip, 'ipv4');
  if (v !== 6) return true;
  return blocked6.check(ip, 'ipv6');
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
