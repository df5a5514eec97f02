import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkWebhookUrl,
  classifyIp,
  type HostLookup,
  type IpClass,
  pinnedLookup,
  resolveAndPin,
} from './ssrf-guard.ts';

const strict = { allowPrivate: false };
const dev = { allowPrivate: true };

describe('classifyIp', () => {
  const cases: Array<[string, IpClass]> = [
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.5', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.1', 'public'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.1.1', 'link_local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', 'public'],
    ['::127.0.0.1', 'loopback'],
    ['::8.8.8.8', 'reserved'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['64:ff9b:1::1', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:0808:0808::1', 'reserved'],
    ['fc00::1', 'unique_local'],
    ['fd00::1', 'unique_local'],
    ['fd00:ec2::254', 'metadata'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf::1', 'link_local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], // Teredo
    ['3fff::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450:4001:81c::200e', 'public'],
    ['[::1]', 'loopback'],
    ['localhost', 'invalid'],
    ['127.1', 'invalid'],
    ['01.2.3.4', 'invalid'],
    ['', 'invalid'],
  ];
  it.each(cases)('%s is %s', (ip, expected) => {
    expect(classifyIp(ip)).toBe(expected);
  });
});

describe('checkWebhookUrl', () => {
  const refused = (url: string): string => {
    const result = checkWebhookUrl(url, strict);
    return result.ok ? 'ok' : result.reason;
  };

  it('lets a public https URL through and returns the parsed URL', () => {
    const result = checkWebhookUrl('https://merchant.example.com/hooks/plainpay?x=1', strict);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.url.hostname).toBe('merchant.example.com');
    expect(refused('http://93.184.215.14:8080/hook')).toBe('ok');
    expect(refused('https://[2606:4700:4700::1111]/hook')).toBe('ok');
  });

  it.each([
    'http://127.0.0.1/x',
    'http://10.0.0.5/',
    'http://169.254.169.254/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
    'http://[fd00::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[64:ff9b::a00:5]/',
    'http://2130706433/', // decimal 127.0.0.1
    'http://0x7f.1/', // hex + short
    'http://0x7f000001/',
    'http://127.1/', // short
    'http://0177.0.0.1/', // octal
    'http://%31%32%37.0.0.1/', // percent-encoded
    'http://0/',
    'http://[::]/',
    'http://192.168.0.1:3000/',
    'https://100.64.0.1/',
  ])('refuses %s', (url) => {
    expect(refused(url)).toBe('non_public_address');
  });

  it('names the address class in the message', () => {
    const result = checkWebhookUrl('http://169.254.169.254/', strict);
    expect(result).toMatchObject({ ok: false, message: expect.stringContaining('metadata') });
    const loop = checkWebhookUrl('http://2130706433/', strict);
    expect(loop).toMatchObject({ ok: false, message: expect.stringContaining('127.0.0.1') });
  });

  it('refuses internal host names', () => {
    for (const url of [
      'http://localhost/',
      'http://LOCALHOST./',
      'http://api.localhost/',
      'http://printer.local/',
      'http://metadata.google.internal/',
      'http://metadata/',
      'http://nas.home.arpa/',
      'http://box.localdomain/',
    ]) {
      expect(refused(url), url).toBe('internal_hostname');
    }
  });

  it('refuses other schemes, credentials and garbage', () => {
    expect(refused('ftp://example.com/file')).toBe('unsupported_scheme');
    expect(refused('file:///etc/passwd')).toBe('unsupported_scheme');
    expect(refused('gopher://example.com/')).toBe('unsupported_scheme');
    expect(refused('javascript:alert(1)')).toBe('unsupported_scheme');
    expect(refused('https://user:pass@example.com/')).toBe('credentials_in_url');
    expect(refused('https://user@example.com/')).toBe('credentials_in_url');
    expect(refused('not a url')).toBe('invalid_url');
    expect(refused('/relative/path')).toBe('invalid_url');
    expect(refused('http://[fe80::1%25eth0]/')).toBe('invalid_url');
  });

  it('allowPrivate lifts the guard for development targets, but never for metadata', () => {
    for (const url of [
      'http://127.0.0.1:4000/x',
      'http://localhost:4000/',
      'http://[::1]/',
      'http://10.0.0.5/',
      'http://app.internal/',
    ]) {
      expect(checkWebhookUrl(url, dev).ok, url).toBe(true);
    }
    expect(checkWebhookUrl('http://169.254.169.254/', dev).ok).toBe(false);
    expect(checkWebhookUrl('http://[fd00:ec2::254]/', dev).ok).toBe(false);
    expect(checkWebhookUrl('http://0.0.0.0/', dev).ok).toBe(false);
    expect(checkWebhookUrl('http://224.0.0.1/', dev).ok).toBe(false);
    expect(checkWebhookUrl('ftp://127.0.0.1/', dev).ok).toBe(false);
    expect(checkWebhookUrl('http://u:p@127.0.0.1/', dev).ok).toBe(false);
  });
});

describe('resolveAndPin', () => {
  const fakeDns =
    (records: Record<string, string[]>): HostLookup =>
    async (hostname) => {
      const addresses = records[hostname];
      if (addresses === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };

  const lookup = fakeDns({
    'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'rebind.example.com': ['127.0.0.1'],
    'mixed.example.com': ['93.184.215.14', '10.0.0.7'],
    'mapped.example.com': ['::ffff:169.254.169.254'],
    'empty.example.com': [],
  });

  it('pins the first address when every record is public', async () => {
    expect(await resolveAndPin('hooks.example.com', { ...strict, lookup })).toEqual({
      ok: true,
      address: '93.184.215.14',
      family: 4,
      resolved: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    });
  });

  it('refuses a name that resolves to loopback', async () => {
    const result = await resolveAndPin('rebind.example.com', { ...strict, lookup });
    expect(result).toMatchObject({
      ok: false,
      reason: 'non_public_address',
      message: expect.stringContaining('127.0.0.1'),
    });
  });

  it('refuses a name with mixed public and private records', async () => {
    const result = await resolveAndPin('mixed.example.com', { ...strict, lookup });
    expect(result).toMatchObject({
      ok: false,
      reason: 'non_public_address',
      message: expect.stringContaining('10.0.0.7'),
    });
  });

  it('refuses an IPv4-mapped metadata answer', async () => {
    expect(await resolveAndPin('mapped.example.com', { ...strict, lookup })).toMatchObject({ ok: false });
  });

  it('reports names that do not resolve', async () => {
    expect(await resolveAndPin('nowhere.example.com', { ...strict, lookup })).toMatchObject({
      ok: false,
      reason: 'dns_failed',
      message: expect.stringContaining('ENOTFOUND'),
    });
    expect(await resolveAndPin('empty.example.com', { ...strict, lookup })).toMatchObject({
      ok: false,
      reason: 'dns_failed',
    });
  });

  it('checks literals without DNS and refuses internal names before asking DNS', async () => {
    const noDns: HostLookup = async () => {
      throw new Error('DNS must not be consulted');
    };
    expect(await resolveAndPin('[::1]', { ...strict, lookup: noDns })).toMatchObject({
      ok: false,
      reason: 'non_public_address',
    });
    expect(await resolveAndPin('8.8.8.8', { ...strict, lookup: noDns })).toMatchObject({
      ok: true,
      address: '8.8.8.8',
      family: 4,
    });
    expect(await resolveAndPin('[2606:4700::1111]', { ...strict, lookup: noDns })).toMatchObject({
      ok: true,
      address: '2606:4700::1111',
      family: 6,
    });
    expect(await resolveAndPin('localhost', { ...strict, lookup: noDns })).toMatchObject({
      ok: false,
      reason: 'internal_hostname',
    });
  });

  it('allowPrivate lets private answers through, never metadata', async () => {
    expect(await resolveAndPin('rebind.example.com', { ...dev, lookup })).toMatchObject({
      ok: true,
      address: '127.0.0.1',
    });
    expect(await resolveAndPin('mixed.example.com', { ...dev, lookup })).toMatchObject({ ok: true });
    expect(await resolveAndPin('mapped.example.com', { ...dev, lookup })).toMatchObject({ ok: false });
  });
});

describe('pinnedLookup', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = createServer((req, res) => res.end(`host=${req.headers.host}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers both single and all-addresses queries with the pinned address', () => {
    const lookup = pinnedLookup('93.184.215.14', 4);
    lookup('anything.example', {}, (err, address, family) => {
      expect([err, address, family]).toEqual([null, '93.184.215.14', 4]);
    });
    lookup('anything.example', { all: true }, (err, address) => {
      expect([err, address]).toEqual([null, [{ address: '93.184.215.14', family: 4 }]]);
    });
  });

  it('makes node:http connect to the pinned address whatever the name says', async () => {
    // ".invalid" can never resolve (RFC 2606), so a response proves the pinned lookup was used,
    // while the Host header still carries the name the receiver expects.
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        { host: 'hooks.plainpay.invalid', port, path: '/', lookup: pinnedLookup('127.0.0.1', 4) },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(body).toBe(`host=hooks.plainpay.invalid:${port}`);
  });
});
