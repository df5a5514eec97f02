import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChainConnection, connectChain } from '../src/chain/chain.ts';
import { heldToolCall } from '../src/http/routes/tool-routes.ts';
import { testAccount, testApp, testRuntime, type TestAccount } from './support/harness.ts';

/**
 * The document is good enough to build a client from (issue 16): types generated from the live
 * /openapi.json by openapi-typescript, a program written against them with openapi-fetch, compiled
 * with strict TypeScript and then run against a listening server. The compile step proves the
 * typing (a held payout is a ConfirmationRequired, not a Payout); the run proves the server
 * answers what the types say.
 *
 * The program is written inside the repository (test/.generated-client-*, git- and biome-ignored,
 * removed after) so that it resolves openapi-fetch from the repository's node_modules.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RECIPIENT = '0x1111111111111111111111111111111111111111';

let chain: ChainConnection;
let app: FastifyInstance;
let merchant: TestAccount;
let baseUrl: string;
let dir: string;

beforeAll(async () => {
  chain = await connectChain({ confirmations: 1 });
  const runtime = await testRuntime({}, { chain });
  app = await testApp(runtime);
  merchant = await testAccount(runtime);
  baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  dir = join(ROOT, 'test', `.generated-client-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir);
  const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as OpenAPI3;
  writeFileSync(join(dir, 'api.ts'), astToString(await openapiTS(document)));
  writeFileSync(join(dir, 'client.ts'), CLIENT_PROGRAM);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2023',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023'],
        types: ['node'],
        strict: true,
        noUncheckedIndexedAccess: true,
        allowImportingTsExtensions: true,
        noEmit: true,
        skipLibCheck: true,
      },
      files: ['client.ts'],
    }),
  );
}, 60_000);

afterAll(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await chain?.close();
});

describe('a client generated from /openapi.json', () => {
  it('compiles with strict TypeScript, typing a held payout as ConfirmationRequired', async () => {
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const result = await run([tsc, '-p', dir, '--noEmit', '--strict', '--pretty', 'false']);
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('runs against the server: payments, a payout, a short balance and a held payout', async () => {
    const result = await run([join(ROOT, 'bin/run-ts.mjs'), join(dir, 'client.ts')], {
      PLAINPAY_URL: baseUrl,
      PLAINPAY_API_KEY: merchant.apiKey,
      RECIPIENT,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout);

    expect(out.payment).toMatchObject({ object: 'payment', status: 'pending', amount: 5000 });
    expect(out.read.id).toBe(out.payment.id);
    expect(out.checkout).toMatchObject({ object: 'checkout', id: out.payment.id });
    expect(out.listed_payments).toContain(out.payment.id);

    expect(out.funded.available).toBe(100);
    expect(out.payout).toEqual({ status: 200, id: expect.stringMatching(/^po_/), state: 'queued', amount: 10 });
    expect(out.listed_payouts).toEqual([out.payout.id]);
    expect(out.short).toEqual({ status: 402, code: 'insufficient_funds' });

    expect(out.held.status).toBe(202);
    expect(out.held.body).toMatchObject({
      object: 'confirmation_required',
      tool: 'create_payout',
      status: 'confirmation_required',
      confirmation_id: expect.stringMatching(/^conf_/),
    });
    // Exactly the documented ConfirmationRequired: no field more, none less.
    expect(Object.keys(out.held.body).sort()).toEqual(Object.keys(heldToolCall.shape).sort());
    expect(out.held.confirmation_id).toBe(out.held.body.confirmation_id);
    expect(out.held.held_status).toBe('confirmation_required');
    expect(out.held.body.reasons.map((r: { rule: string }) => r.rule)).toContain('confirm_above');
  });
});

/** Runs node with the arguments; resolves with its exit code and output, whatever the code. */
function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The client program: what a developer would write against the generated types, plus the lines
 * that prove the typing. It prints one JSON object for the test to check.
 */
const CLIENT_PROGRAM = `import createClient from 'openapi-fetch';
import type { components, paths } from './api.ts';

type Payout = components['schemas']['Payout'];
type ConfirmationRequired = components['schemas']['ConfirmationRequired'];

const client = createClient<paths>({
  baseUrl: process.env.PLAINPAY_URL,
  headers: { Authorization: \`Bearer \${process.env.PLAINPAY_API_KEY}\` },
});
const recipient = process.env.RECIPIENT ?? '';

function fail(step: string, answer: { error?: unknown; response: Response }): never {
  throw new Error(\`\${step}: \${answer.response.status} \${JSON.stringify(answer.error)}\`);
}

/**
 * openapi-fetch types data as the union of every 2xx body and response as a plain Response, so a
 * status check alone does not narrow the body. This pairs each documented status with its own
 * body, as the generated types declare them, so that checking the status does.
 */
type Answer<Responses> = {
  [Status in keyof Responses]: {
    status: Status;
    body: Responses[Status] extends { content: { 'application/json': infer Body } } ? Body : never;
  };
}[keyof Responses];

function answer<Responses>(result: { data?: unknown; error?: unknown; response: Response }): Answer<Responses> {
  return { status: result.response.status, body: result.data ?? result.error } as Answer<Responses>;
}

type PayoutResponses = paths['/v1/payouts']['post']['responses'];

const created = await client.POST('/v1/payments', {
  body: { amount: 5000, currency: 'NGN', redirect_url: 'https://shop.example/thanks' },
});
if (!created.data) fail('create a payment', created);
const payment = created.data;

const read = await client.GET('/v1/payments/{payment_id}', { params: { path: { payment_id: payment.id } } });
if (!read.data) fail('read the payment', read);

const checkout = await client.GET('/checkout/{id}', { params: { path: { id: payment.id } } });
if (!checkout.data) fail('read the public checkout', checkout);

const payments = await client.GET('/v1/payments', { params: { query: { limit: 10 } } });
if (!payments.data) fail('list payments', payments);

const funded = await client.POST('/v1/test_helpers/balance/fund', { body: { amount: 100 } });
if (!funded.data) fail('fund the test balance', funded);

const paid = answer<PayoutResponses>(await client.POST('/v1/payouts', { body: { amount: 10, to_address: recipient } }));
if (paid.status !== 200) throw new Error(\`a payout under every limit answered \${paid.status}\`);
const payout: Payout = paid.body;

const payouts = await client.GET('/v1/payouts', { params: { query: { limit: 10 } } });
if (!payouts.data) fail('list payouts', payouts);

const short = await client.POST('/v1/payouts', { body: { amount: 5000, to_address: recipient } });
// The error body is the Error component: its code is one of the documented codes.
const shortCode: components['schemas']['Error']['error']['code'] = short.error?.error.code;
if (shortCode !== 'insufficient_funds') fail('a payout above the balance', short);

const current = await client.GET('/v1/policy');
if (!current.data) fail('read the policy', current);
const { policy } = current.data;
const saved = await client.PUT('/v1/policy', {
  body: { ...policy, channels: { ...policy.channels, api: { ...policy.channels.api, confirm_above: 50 } } },
});
if (!saved.data) fail('hold api payouts above 50', saved);

const held = answer<PayoutResponses>(await client.POST('/v1/payouts', { body: { amount: 60, to_address: recipient } }));
if (held.status !== 202) throw new Error(\`a payout above confirm_above answered \${held.status}\`);
// Narrowed by the status alone: fields only a ConfirmationRequired has, without a cast.
const confirmation: ConfirmationRequired = held.body;
const confirmationId: string = held.body.confirmation_id;
const heldStatus: 'confirmation_required' = held.body.status;
// @ts-expect-error a held payout is not a payout: it has no id of its own (the defect: typed Payout, id undefined).
held.body.id;
// @ts-expect-error nor a recipient field.
held.body.to_address;

console.log(
  JSON.stringify({
    payment,
    read: read.data,
    checkout: checkout.data,
    listed_payments: payments.data.data.map((p) => p.id),
    funded: funded.data,
    payout: { status: paid.status, id: payout.id, state: payout.status, amount: payout.amount },
    listed_payouts: payouts.data.data.map((p) => p.id),
    short: { status: short.response.status, code: shortCode },
    held: { status: held.status, body: confirmation, confirmation_id: confirmationId, held_status: heldStatus },
  }),
);
`;
