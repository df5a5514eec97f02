// `plainpay listen --forward-to URL` (issue 35): run as a merchant runs it, a child process with
// the key in PLAINPAY_API_KEY, against a running API host. An event written after it started reaches
// a receiver on loopback (the server's WEBHOOK_ALLOW_PRIVATE is off: the CLI delivers), signed with
// the secret it printed, and the receiver verifies it with the public `standardwebhooks` package.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeEventBody } from '../src/webhooks/events.ts';
import { generateWebhookSecret } from '../src/webhooks/signer.ts';
import { type TestAccount, type TestRuntime, testAccount, testApp, testRuntime } from './support/harness.ts';
import { CLI } from './support/server.ts';
import { eventually, writeEvent } from './support/webhooks.ts';

const run = promisify(execFile);

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  verified: { id: string; type: string } | { error: string };
}

let runtime: TestRuntime;
let api: FastifyInstance;
let apiUrl: string;
let merchant: TestAccount;
const received: Received[] = [];
let receiverUrl: string;
/** Learnt from what `plainpay listen` prints at start. */
let secret: string | undefined;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  runtime = await testRuntime();
  expect(runtime.config.webhookAllowPrivate).toBe(false);
  api = await testApp(runtime);
  await api.listen({ port: 0, host: '127.0.0.1' });
  apiUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  merchant = await testAccount(runtime);
  // A merchant's receiver, on the public package: verify the raw body, answer 2xx.
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified: Received['verified'];
      try {
        verified = new Webhook(secret!).verify(body, req.headers as Record<string, string>) as {
          id: string;
          type: string;
        };
      } catch (error) {
        verified = { error: (error as Error).message };
      }
      received.push({ headers: req.headers, body, verified });
      res.writeHead('error' in verified ? 400 : 204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://localhost:${(receiver.address() as AddressInfo).port}/webhooks`;
  closers.push(
    () => new Promise<void>((resolve) => receiver.close(() => resolve())),
    () => api.close(),
  );
});

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** `plainpay listen` as a child process; resolves once it said which secret it signs with. */
async function startListen(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [CLI, 'listen', ...args], {
    env: { PATH: process.env.PATH ?? '', PLAINPAY_API_KEY: merchant.apiKey, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  closers.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on('data', (chunk) => {
      output += chunk;
    });
  }
  await eventually(async () => /\(Ctrl-C to stop\)/.test(output) || undefined, 60_000);
  return { child, output: () => output };
}

describe('plainpay listen', () => {
  it('forwards an event written after its start, signed with the secret it printed, and stops on Ctrl-C', async () => {
    const before = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: null });
    const listen = await startListen(['--forward-to', receiverUrl, '--api-url', apiUrl]);
    expect(listen.output()).toContain(`Forwarding test-mode events of ${merchant.accountId} to ${receiverUrl}`);
    secret = /Your webhook signing secret is (whsec_\S+)/.exec(listen.output())![1];

    const event = await writeEvent(runtime, {
      accountId: merchant.accountId,
      type: 'payment.settled',
      // The body must be the one a real delivery of this event carries, byte for byte.
      data: { reference: 'order-77', metadata: { note: 'Àdùkẹ́ ₦', amount: 0.1, small: 1e-7 } },
      webhookUrl: null,
    });
    const [delivery] = await eventually(async () => (received.length > 0 ? received : undefined), 20_000);
    expect(delivery!.verified).toMatchObject({ id: event.id, type: 'payment.settled' });
    expect(delivery!.headers['webhook-id']).toBe(event.id);
    expect(delivery!.body).toBe(
      serializeEventBody({
        id: event.id,
        type: event.type,
        createdAt: event.created_at,
        livemode: event.livemode,
        dataText: JSON.stringify(event.data),
      }),
    );
    await eventually(async () => listen.output().includes(`<-- [204] POST ${receiverUrl} [${event.id}]`) || undefined);

    const exited = new Promise<number | null>((resolve) => listen.child.once('exit', resolve));
    listen.child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(listen.output().trimEnd().endsWith('stopped')).toBe(true);
    // Only what was written after the start, once.
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([event.id]);
    expect(listen.output()).not.toContain(before.id);
  }, 90_000);

  it("signs with PLAINPAY_LISTEN_SECRET when set, and never prints it (it may be a real receiver's)", async () => {
    const given = generateWebhookSecret();
    const listen = await startListen(['--forward-to', receiverUrl, '--api-url', apiUrl], {
      PLAINPAY_LISTEN_SECRET: given,
    });
    secret = given;
    expect(listen.output()).toContain('Signing with the secret from PLAINPAY_LISTEN_SECRET');
    const event = await writeEvent(runtime, { accountId: merchant.accountId, webhookUrl: null });
    await eventually(async () => listen.output().includes(`<-- [204] POST ${receiverUrl} [${event.id}]`) || undefined);
    expect(received.find((r) => r.headers['webhook-id'] === event.id)?.verified).toMatchObject({ id: event.id });
    const exited = new Promise<number | null>((resolve) => listen.child.once('exit', resolve));
    listen.child.kill('SIGINT');
    expect(await exited).toBe(0);
    const secretBody = given.slice('whsec_'.length);
    expect(listen.output()).not.toContain(secretBody);
  }, 90_000);

  it('refuses an --api-url of plain http to another machine: the key would travel in cleartext', async () => {
    for (const url of ['http://plainpay.example.com', 'http://10.0.0.5:3000', 'http://localhost.example.com']) {
      const refused = await run(process.execPath, [CLI, 'listen', '--forward-to', receiverUrl, '--api-url', url], {
        env: { PATH: process.env.PATH ?? '', PLAINPAY_API_KEY: merchant.apiKey },
      }).catch((error: { code: number; stdout: string; stderr: string }) => error);
      expect(refused).toMatchObject({ code: 2 });
      expect((refused as { stderr: string }).stderr).toContain('the API key would cross the network in cleartext');
      expect((refused as { stdout: string; stderr: string }).stderr).not.toContain(merchant.apiKey);
    }
  }, 60_000);

  it('is listed by --help, and refuses to start without a key or a --forward-to', async () => {
    const help = await run(process.execPath, [CLI, '--help'], { env: { PATH: process.env.PATH ?? '' } });
    expect(help.stdout).toContain('plainpay listen --forward-to URL');
    const noKey = await run(process.execPath, [CLI, 'listen', '--forward-to', receiverUrl], {
      env: { PATH: process.env.PATH ?? '' },
    }).catch((error: { code: number; stderr: string }) => error);
    expect(noKey).toMatchObject({ code: 2 });
    expect((noKey as { stderr: string }).stderr).toContain('PLAINPAY_API_KEY is not set');
    const noTarget = await run(process.execPath, [CLI, 'listen'], {
      env: { PATH: process.env.PATH ?? '', PLAINPAY_API_KEY: merchant.apiKey },
    }).catch((error: { code: number; stderr: string }) => error);
    expect(noTarget).toMatchObject({ code: 2 });
    expect((noTarget as { stderr: string }).stderr).toContain('--forward-to is required');
  }, 60_000);
});
