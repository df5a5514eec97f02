import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, childEnv, freePort, startServer } from './support/server.ts';

const run = promisify(execFile);
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plainpay-cli-'));
  dirs.push(dir);
  return dir;
}

describe('plainpay CLI', () => {
  it('accounts create --json prints exactly { account, api_key, webhook_secret }', async () => {
    const dataDir = tempDataDir();
    const { stdout } = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Ada Shop', '--json'], {
      env: childEnv(dataDir),
    });
    const created = JSON.parse(stdout);
    expect(Object.keys(created).sort()).toEqual(['account', 'api_key', 'webhook_secret']);
    expect(created.account).toMatch(/^acct_/);
    expect(created.api_key).toMatch(/^sk_test_/);
    expect(created.webhook_secret).toMatch(/^whsec_/);

    const listed = await run(process.execPath, [CLI, 'keys', 'list', '--account', created.account, '--json'], {
      env: childEnv(dataDir),
    });
    const keys = JSON.parse(listed.stdout);
    // The list envelope GET /keys answers.
    expect(keys).toMatchObject({ object: 'list', has_more: false });
    expect(keys.data).toHaveLength(1);
    expect(listed.stdout).not.toContain(created.api_key);

    // A key for an assistant (docs/policy.md "Keys for assistants").
    const assistant = await run(
      process.execPath,
      [
        CLI,
        'keys',
        'create',
        '--account',
        created.account,
        '--scopes',
        'payments:read,payouts:write',
        '--assistant',
        '--json',
      ],
      { env: childEnv(dataDir) },
    );
    expect(JSON.parse(assistant.stdout)).toMatchObject({ assistant: true, scopes: ['payments:read', 'payouts:write'] });
  }, 90_000);

  it('a second Ctrl-C while stopping does not cut the graceful stop short', async () => {
    const server = await startServer();
    // A request whose body is still coming holds the stop open (it waits for requests under way),
    // so the second signal lands while stopping however fast the rest of the stop is. The server
    // answers `Expect: 100-continue` as it takes the request in (node writes the 100, then hands
    // the request to fastify in the same tick): once the 100 is here, the request is under way.
    const pending = connect(server.port, '127.0.0.1');
    await once(pending, 'connect');
    const continued = new Promise<void>((resolve) => {
      let seen = '';
      pending.on('data', (chunk: Buffer) => {
        seen += chunk.toString('latin1');
        if (seen.includes('100 Continue')) resolve();
      });
    });
    pending.write(
      `POST /v1/payments HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${server.demoKey}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n{"amount":',
    );
    await continued;
    // npm forwards SIGINT to the child that the terminal also signalled: two arrive back to back.
    const stopped = server.stop(['SIGINT', 'SIGINT']);
    const deadline = Date.now() + 60_000;
    while (!server.output().includes('already stopping') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(server.output()).toContain('already stopping');
    pending.destroy();
    expect(await stopped).toBe(0);
  }, 90_000);

  it('a bad variable stops the CLI with a message naming it', async () => {
    const error = await run(process.execPath, [CLI, 'migrate'], { env: childEnv(tempDataDir(), { PORT: 'x' }) }).catch(
      (e) => e,
    );
    expect(error.code).toBe(78);
    expect(error.stderr).toContain('PORT="x"');
  });

  it('a serve that cannot start exits, REDIS_URL set or not', async () => {
    const dataDir = tempDataDir();
    const rates = join(dataDir, 'rates.json');
    writeFileSync(rates, '{}');
    // Nothing listens there: a Redis client left open would retry for ever and keep the process up.
    const redis = `redis://127.0.0.1:${await freePort()}`;
    for (const extra of [{}, { REDIS_URL: redis }] as Array<Record<string, string>>) {
      const error = await run(process.execPath, [CLI, 'serve'], {
        env: childEnv(dataDir, { FX_RATES_FILE: rates, ...extra }),
        // A ceiling only a hang reaches: the process is then killed, and the code below is null.
        timeout: 50_000,
      }).catch((e) => e);
      expect(error.code).toBe(1);
      expect(error.stderr).toContain(`FX_RATES_FILE ${rates} is invalid`);
    }
  }, 120_000);

  it('serve on an empty embedded database prints the URLs and a demo key that works', async () => {
    const server = await startServer();
    try {
      expect(server.output()).toContain(`API:      http://localhost:${server.port}`);
      expect(server.output()).toContain(`Checkout: http://localhost:${server.checkoutPort}`);
      const ping = await fetch(`${server.url}/v1/ping`, { headers: { authorization: `Bearer ${server.demoKey}` } });
      expect(ping.status).toBe(200);
      const body = (await ping.json()) as { ok: boolean; account: string; live: boolean };
      expect(body).toMatchObject({ ok: true, live: false });
      expect(body.account).toMatch(/^acct_/);
      expect((await fetch(`${server.checkoutUrl}/healthz`)).status).toBe(200);
    } finally {
      // Graceful stop on SIGTERM exits 0 (and releases the data dir lock).
      expect(await server.stop()).toBe(0);
    }
    expect(server.output()).not.toContain('"level":50');
  }, 90_000);
});
