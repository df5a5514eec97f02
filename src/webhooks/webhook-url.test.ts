import { describe, expect, it } from 'vitest';
import { settlesBeforeHang } from '../../test/support/hang.ts';
import type { HostLookup } from './ssrf-guard.ts';
import { validateWebhookUrl, WEBHOOK_URL_MAX_LENGTH } from './webhook-url.ts';

const fakeDns =
  (records: Record<string, string[]>): HostLookup =>
  async (hostname) => {
    const addresses = records[hostname];
    if (addresses === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

const lookup = fakeDns({
  'hooks.merchant.example': ['93.184.215.14'],
  'sneaky.merchant.example': ['127.0.0.1'],
  'mixed.merchant.example': ['93.184.215.14', '10.0.0.7'],
  'cloud.merchant.example': ['169.254.169.254'],
});
const strict = { allowPrivate: false, lookup };

describe('validateWebhookUrl', () => {
  it('accepts a public https or http URL', async () => {
    expect(await validateWebhookUrl('https://hooks.merchant.example/plainpay?x=1', strict)).toEqual({ ok: true });
    expect(await validateWebhookUrl('http://93.184.215.14:8080/hook', strict)).toEqual({ ok: true });
  });

  it.each([
    'http://127.0.0.1/x',
    'http://10.0.0.5/',
    'http://169.254.169.254/',
    'http://[::1]/',
    'http://[fd00::1]/',
    'http://100.64.0.1/',
    'http://192.168.1.20/',
    'http://[fe80::1]/',
    'http://2130706433/',
  ])('refuses %s', async (url) => {
    const verdict = await validateWebhookUrl(url, strict);
    expect(verdict).toMatchObject({ ok: false, reason: 'non_public_address' });
    if (!verdict.ok) {
      expect(verdict.message).toMatch(/^webhook_url /);
      expect(verdict.message).not.toMatch(/\.$/);
    }
  });

  it('refuses a hostname that resolves to 127.0.0.1, naming the address', async () => {
    const verdict = await validateWebhookUrl('https://sneaky.merchant.example/hook', strict);
    expect(verdict).toEqual({
      ok: false,
      reason: 'non_public_address',
      message:
        'webhook_url host sneaky.merchant.example (127.0.0.1) is a loopback address; only public addresses are allowed',
    });
  });

  it('refuses a name with one private record among public ones, and a metadata answer', async () => {
    expect(await validateWebhookUrl('https://mixed.merchant.example/', strict)).toMatchObject({ ok: false });
    expect(await validateWebhookUrl('https://cloud.merchant.example/', strict)).toMatchObject({ ok: false });
  });

  it('refuses other schemes, credentials, internal names and overlong URLs', async () => {
    expect(await validateWebhookUrl('ftp://hooks.merchant.example/', strict)).toMatchObject({
      ok: false,
      reason: 'unsupported_scheme',
    });
    expect(await validateWebhookUrl('https://u:p@hooks.merchant.example/', strict)).toMatchObject({
      ok: false,
      reason: 'credentials_in_url',
    });
    expect(await validateWebhookUrl('http://localhost:4000/', strict)).toMatchObject({
      ok: false,
      reason: 'internal_hostname',
    });
    const long = `https://hooks.merchant.example/${'a'.repeat(WEBHOOK_URL_MAX_LENGTH)}`;
    expect(await validateWebhookUrl(long, strict)).toMatchObject({ ok: false, reason: 'too_long' });
  });

  it('accepts a name that does not resolve (yet), or not in time: delivery checks again at connect time', async () => {
    expect(await validateWebhookUrl('https://not-yet.merchant.example/', strict)).toEqual({ ok: true });
    const hang: HostLookup = () => new Promise(() => {});
    // A lookup that never answers must not hold the request: the check gives up after timeoutMs.
    const result = await settlesBeforeHang(
      validateWebhookUrl('https://slow.merchant.example/', { allowPrivate: false, lookup: hang, timeoutMs: 50 }),
    );
    expect(result).toEqual({ settled: true, value: { ok: true } });
  });

  it('WEBHOOK_ALLOW_PRIVATE lets loopback and private targets through, never metadata', async () => {
    const dev = { allowPrivate: true, lookup };
    expect(await validateWebhookUrl('http://127.0.0.1:4000/x', dev)).toEqual({ ok: true });
    expect(await validateWebhookUrl('http://localhost:4000/x', dev)).toEqual({ ok: true });
    expect(await validateWebhookUrl('https://sneaky.merchant.example/', dev)).toEqual({ ok: true });
    expect(await validateWebhookUrl('http://169.254.169.254/', dev)).toMatchObject({ ok: false });
    expect(await validateWebhookUrl('https://cloud.merchant.example/', dev)).toMatchObject({ ok: false });
  });
});
