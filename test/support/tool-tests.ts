// Set-up shared by the tests beside the merchant tools (tools/*.test.ts): a merchant's key as an
// actor, a settled payment to spend from, and the refusal a tool throws.

import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { AppError } from '../../src/core/errors.ts';
import type { Actor, AnyTool } from '../../src/core/tool.ts';
import { paySandbox } from '../../src/payments/sandbox-rail.ts';
import { executedOutput, executeTool } from '../../src/pipeline/execute-tool.ts';
import type { Runtime } from '../../src/runtime.ts';
import { settlePaidPayments } from '../../src/settlement/payment-settlement.ts';
import { createPayment } from '../../tools/create-payment.ts';
import { getBalance } from '../../tools/get-balance.ts';
import { testAccount } from './harness.ts';
import { firstKeyAuth, fund } from './money.ts';

/**
 * A new merchant's first key, calling on `channel`, with `funds` USDC in its test balance (funding
 * goes through the app's test helper, so it needs the app).
 */
export async function merchantActor(
  runtime: Runtime,
  { app, funds = 0, channel = 'api' }: { app?: FastifyInstance; funds?: number; channel?: Actor['channel'] } = {},
): Promise<Actor> {
  const account = await testAccount(runtime);
  if (funds > 0) {
    if (!app) throw new Error('funding a test balance needs the app');
    await fund(app, account.apiKey, funds);
  }
  return { ...(await firstKeyAuth(runtime, account.accountId)), channel };
}

/** A 100 USD payment, paid and settled into the balance (99 USDC credited). */
export async function settledPayment(runtime: Runtime, actor: Actor): Promise<string> {
  const { id } = executedOutput(
    await executeTool(
      createPayment,
      { amount: 100, currency: 'USD', redirect_url: 'https://shop.example/thanks' },
      { runtime, actor },
    ),
  );
  await paySandbox(runtime, actor, id, 'succeeded');
  while ((await settlePaidPayments(runtime, { chunk: 50, testModeOnChain: async () => false })) > 0);
  return id;
}

/** The merchant's available USDC, as get_balance reports it. */
export async function availableUsdc(runtime: Runtime, actor: Actor): Promise<number> {
  return executedOutput(await executeTool(getBalance, {}, { runtime, actor })).available[0]!.amount;
}

/** The error the tool refuses the call with; fails the test if the call succeeds. */
export async function toolRefusal(
  runtime: Runtime,
  tool: AnyTool,
  actor: Actor,
  input: unknown,
  idempotencyKey?: string,
): Promise<AppError> {
  const error = await executeTool(tool, input, { runtime, actor, idempotencyKey }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

/** Each input is refused as invalid_request on its parameter, the message naming the rule broken. */
export async function expectInvalidRequests(
  refuse: (input: unknown) => Promise<AppError>,
  cases: readonly (readonly [input: unknown, param: string, rule: string])[],
): Promise<void> {
  for (const [input, param, rule] of cases) {
    const error = await refuse(input);
    expect(error, JSON.stringify(input)).toMatchObject({ code: 'invalid_request', param });
    expect(error.message, JSON.stringify(input)).toContain(rule);
  }
}

/** The ids of a page of a list, in its order. */
export const pageIds = (page: { data: { id: string }[] }): string[] => page.data.map((row) => row.id);
