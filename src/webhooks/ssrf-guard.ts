// SSRF guard for webhook delivery. A merchant chooses the webhook URL, so without this the
// delivery worker would POST wherever it is told: the cloud metadata service, the database port,
// an admin panel on localhost. Three layers, each refusing when in doubt:
//   1. checkWebhookUrl: at registration, the URL's shape and any literal IP host;
//   2. resolveAndPin: at delivery, every A/AAAA record must be public;
//   3. pinnedLookup: the socket connects to the very address that was checked, so a DNS answer
//      that changes between check and connect (DNS rebinding) cannot redirect it.

import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';

export type IpClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'unique_local'
  | 'multicast'
  | 'unspecified'
  | 'reserved'
  | 'metadata'
  /** Not an IP address at all; never connectable, so never allowed. */
  | 'invalid';

type Range = readonly [prefix: readonly number[], bits: number, kind: IpClass];

// First match wins, so the specific entries (metadata) come before the blocks that contain them.
// Sources: IANA IPv4/IPv6 Special-Purpose Address Registries, plus cloud metadata endpoints.
const IPV4_RANGES: readonly Range[] = [
  [[169, 254, 169, 254], 32, 'metadata'], // AWS, GCP, Azure, OpenStack, DigitalOcean…
  [[169, 254, 170, 2], 32, 'metadata'], // AWS ECS task metadata
  [[169, 254, 170, 23], 32, 'metadata'], // AWS EKS pod identity agent
  [[100, 100, 100, 200], 32, 'metadata'], // Alibaba Cloud
  [[192, 0, 0, 192], 32, 'metadata'], // Oracle Cloud
  [[168, 63, 129, 16], 32, 'metadata'], // Azure WireServer: a public-looking address that talks to the host
  [[0, 0, 0, 0], 8, 'unspecified'], // "this network"; Linux connects 0.0.0.0 to localhost
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'cgnat'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link_local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2, 0], 24, 'reserved'], // TEST-NET-1 (documentation)
  [[192, 88, 99, 0], 24, 'reserved'], // deprecated 6to4 relay anycast
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'], // benchmarking
  [[198, 51, 100, 0], 24, 'reserved'], // TEST-NET-2
  [[203, 0, 113, 0], 24, 'reserved'], // TEST-NET-3
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'], // future use, and 255.255.255.255 broadcast
];

// IPv6 prefixes as 16-bit groups. Blocks that embed an IPv4 address are handled in classifyV6.
const IPV6_RANGES: readonly Range[] = [
  [[0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254], 128, 'metadata'], // AWS IMDS over IPv6
  [[0x0064, 0xff9b, 0x0001], 48, 'private'], // local-use NAT64 (RFC 8215)
  [[0x0100], 64, 'reserved'], // discard-only
  [[0x2001, 0x0db8], 32, 'reserved'], // documentation
  [[0x2001], 23, 'reserved'], // IETF protocol assignments, incl. Teredo 2001::/32
  [[0x3fff], 20, 'reserved'], // documentation (RFC 9637)
  [[0x5f00], 16, 'reserved'], // SRv6 SIDs
  [[0xfc00], 7, 'unique_local'],
  [[0xfe80], 10, 'link_local'],
  [[0xfec0], 10, 'private'], // deprecated site-local
  [[0xff00], 8, 'multicast'],
];

function matches(value: readonly number[], prefix: readonly number[], bits: number, width: number): boolean {
  let remaining = bits;
  for (let i = 0; remaining > 0; i++) {
    const take = Math.min(width, remaining);
    const shift = width - take;
    if ((value[i] ?? 0) >> shift !== (prefix[i] ?? 0) >> shift) return false;
    remaining -= take;
  }
  return true;
}

function lookupRange(value: readonly number[], ranges: readonly Range[], width: number): IpClass | undefined {
  for (const [prefix, bits, kind] of ranges) if (matches(value, prefix, bits, width)) return kind;
  return undefined;
}

function parseV4(text: string): number[] {
  return text.split('.').map(Number);
}

/** Eight 16-bit groups; `text` has already passed isIP(…) === 6 and lost any zone id. */
function parseV6(text: string): number[] {
  let body = text;
  const tail: number[] = [];
  if (body.includes('.')) {
    // Dotted IPv4 tail ("::ffff:127.0.0.1") becomes two groups.
    const cut = body.lastIndexOf(':');
    const [a = 0, b = 0, c = 0, d = 0] = parseV4(body.slice(cut + 1));
    tail.push((a << 8) | b, (c << 8) | d);
    // Drop the separator before the IPv4 part unless it belongs to a "::" ("::1.2.3.4").
    const head = text.slice(0, cut + 1);
    body = head.endsWith('::') ? head : text.slice(0, cut);
  }
  const toGroups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const doubleColon = body.indexOf('::');
  let groups: number[];
  if (doubleColon === -1) {
    groups = [...toGroups(body), ...tail];
  } else {
    const head = toGroups(body.slice(0, doubleColon));
    const rest = [...toGroups(body.slice(doubleColon + 2)), ...tail];
    groups = [...head, ...new Array<number>(8 - head.length - rest.length).fill(0), ...rest];
  }
  return groups;
}

function classifyV4(octets: readonly number[]): IpClass {
  return lookupRange(octets, IPV4_RANGES, 8) ?? 'public';
}

/** The IPv4 address carried in two 16-bit groups. */
function v4From(high: number, low: number): number[] {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff];
}

/** A translated/tunnelled IPv4 keeps its own class; if it is public, the wrapper is still suspect. */
function embedded(v4: readonly number[], whenPublic: IpClass): IpClass {
  const inner = classifyV4(v4);
  return inner === 'public' ? whenPublic : inner;
}

function classifyV6(g: readonly number[]): IpClass {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const firstFiveZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (firstFiveZero && g5 === 0xffff) return classifyV4(v4From(g6, g7)); // ::ffff:a.b.c.d, IPv4-mapped
  if (firstFiveZero && g5 === 0 && g6 === 0) {
    if (g7 === 0) return 'unspecified'; // ::
    if (g7 === 1) return 'loopback'; // ::1
  }
  if (firstFiveZero && g5 === 0) return embedded(v4From(g6, g7), 'reserved'); // deprecated ::a.b.c.d
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) {
    return embedded(v4From(g6, g7), 'reserved'); // ::ffff:0:a.b.c.d, SIIT IPv4-translated
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    // NAT64 well-known prefix: a gateway forwards to the embedded IPv4, so that address decides.
    return classifyV4(v4From(g6, g7));
  }
  if (g0 === 0x2002) return embedded(v4From(g1, g2), 'reserved'); // 6to4 (deprecated)
  const ranged = lookupRange(g, IPV6_RANGES, 16);
  if (ranged !== undefined) return ranged;
  if (g0 >> 13 !== 0b001) return 'reserved'; // outside 2000::/3, the only global unicast allocation
  return 'public';
}

/**
 * Classifies an IPv4 or IPv6 address (brackets and an IPv6 zone id are tolerated). Only 'public'
 * is safe to deliver to; anything that is not an IP address is 'invalid'.
 */
export function classifyIp(ip: string): IpClass {
  let text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const family = isIP(text);
  if (family === 4) return classifyV4(parseV4(text));
  if (family !== 6) return 'invalid';
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  return classifyV6(parseV6(text));
}

// Never a legitimate webhook receiver, even in development with allowPrivate.
const ALWAYS_REFUSED: ReadonlySet<IpClass> = new Set(['metadata', 'multicast', 'unspecified', 'invalid']);

/** Whether delivery may connect to an address of this class. */
export function isDeliverableClass(kind: IpClass, options: { allowPrivate: boolean }): boolean {
  if (kind === 'public') return true;
  return options.allowPrivate && !ALWAYS_REFUSED.has(kind);
}

export type WebhookUrlRefusal =
  | 'invalid_url'
  | 'unsupported_scheme'
  | 'credentials_in_url'
  | 'missing_host'
  | 'internal_hostname'
  | 'non_public_address'
  | 'dns_failed';

export type Refused = { ok: false; reason: WebhookUrlRefusal; message: string };

export interface GuardOptions {
  /** Development only: lets loopback/private/link-local receivers through (never metadata). */
  readonly allowPrivate: boolean;
}

// Names that only ever mean "this machine" or "this network". Single-label names are refused too:
// resolvers expand them with search domains ("metadata" → metadata.google.internal).
const INTERNAL_SUFFIXES = ['localhost', 'local', 'internal', 'localdomain', 'home.arpa'];

function isInternalHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  if (!name.includes('.')) return true;
  return INTERNAL_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}

function refuseAddress(address: string, kind: IpClass): Refused {
  return {
    ok: false,
    reason: 'non_public_address',
    message: `webhook target ${address} is a ${kind.replace('_', '-')} address; only public addresses are allowed`,
  };
}

/**
 * The registration-time check. Relies on the WHATWG URL parser, which already rewrites odd IPv4
 * spellings ("http://2130706433/", "http://0x7f.1/", "http://127.1/") to dotted quads, so the
 * classifier sees the address the socket would use. A hostname passes here and is checked again
 * by resolveAndPin at delivery, because DNS can change after registration.
 */
export function checkWebhookUrl(url: string, options: GuardOptions): { ok: true; url: URL } | Refused {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'invalid_url', message: 'webhook_url must be an absolute http(s) URL' };
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return { ok: false, reason: 'unsupported_scheme', message: 'webhook_url must use https or http' };
  }
  if (parsed.username !== '' || parsed.password !== '') {
    // Credentials in the URL would be stored and logged in clear; receivers verify signatures instead.
    return { ok: false, reason: 'credentials_in_url', message: 'webhook_url must not contain a user name or password' };
  }
  const host = parsed.hostname;
  if (host === '') return { ok: false, reason: 'missing_host', message: 'webhook_url must have a host' };

  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  if (isIP(literal) !== 0) {
    const kind = classifyIp(literal);
    return isDeliverableClass(kind, options) ? { ok: true, url: parsed } : refuseAddress(host, kind);
  }
  if (!options.allowPrivate && isInternalHostname(host)) {
    return { ok: false, reason: 'internal_hostname', message: `webhook_url host ${host} is an internal name` };
  }
  return { ok: true, url: parsed };
}

export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** Resolves every A and AAAA record of a name; dns/promises by default, injectable for tests. */
export type HostLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true });

export type PinnedAddress = {
  ok: true;
  /** Connect to this, via pinnedLookup. */
  address: string;
  family: 4 | 6;
  /** Everything the name resolved to, all of it checked. */
  resolved: readonly string[];
};

/**
 * The connect-time check: resolves the name, refuses if ANY record is not deliverable (an attacker
 * who controls DNS can return one public and one private record and let the client pick), and
 * returns the first address to pin the connection to.
 */
export async function resolveAndPin(
  hostname: string,
  options: GuardOptions & { readonly lookup?: HostLookup },
): Promise<PinnedAddress | Refused> {
  const literal = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  const literalFamily = isIP(literal);
  if (literalFamily === 4 || literalFamily === 6) {
    const kind = classifyIp(literal);
    if (!isDeliverableClass(kind, options)) return refuseAddress(literal, kind);
    return { ok: true, address: literal, family: literalFamily, resolved: [literal] };
  }
  if (!options.allowPrivate && isInternalHostname(literal)) {
    return { ok: false, reason: 'internal_hostname', message: `webhook host ${literal} is an internal name` };
  }

  let records: readonly ResolvedAddress[];
  try {
    records = await (options.lookup ?? systemLookup)(literal);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    return {
      ok: false,
      reason: 'dns_failed',
      message: `webhook host ${literal} did not resolve${code ? ` (${code})` : ''}`,
    };
  }

  const resolved: string[] = [];
  for (const record of records) {
    // The family is re-derived from the text: a lookup result is data, not something to trust.
    const kind = classifyIp(record.address);
    if (!isDeliverableClass(kind, options)) return refuseAddress(`${literal} (${record.address})`, kind);
    resolved.push(record.address);
  }
  const first = resolved[0];
  if (first === undefined) {
    return { ok: false, reason: 'dns_failed', message: `webhook host ${literal} has no A or AAAA records` };
  }
  return { ok: true, address: first, family: isIP(first) === 6 ? 6 : 4, resolved };
}

/**
 * A `lookup` for node:http(s) `request({ lookup })` (or undici's `connect.lookup`) that answers every
 * query with the pinned address, so the socket goes exactly where resolveAndPin looked. The URL's
 * hostname is still used for the Host header, SNI and certificate checks.
 */
export function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    // Node ≥ 20 connects with autoSelectFamily, which asks for `all: true` and expects an array.
    if (options.all === true) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}
