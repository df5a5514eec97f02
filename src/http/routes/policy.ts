import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { AnyTool } from '../../core/tool.ts';
import { parsePolicy, PolicySchema, PolicyViewSchema, policyToJson } from '../../policy/policy-schema.ts';
import { loadPolicy, savePolicy, type StoredPolicy } from '../../policy/store.ts';
import { loadSettlementSchedule, saveSettlementSchedule } from '../../db/repositories/settlement-schedules.ts';
import {
  parseSettlementSchedule,
  presentSettlementSchedule,
  SettlementScheduleSchema,
} from '../../settlement/schedules.ts';
import { SETTLEMENT_SCHEDULES } from '../../domain/settlement-windows.ts';
import type { ApiServices } from './services.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

const settlementScheduleResponse = z
  .object({
    object: z.literal('settlement_schedule'),
    livemode: z.boolean().describe("The mode this schedule applies to (the key's)."),
    schedule: z.enum(SETTLEMENT_SCHEDULES).describe('instant (the default), hourly, daily or threshold.'),
    threshold: z
      .number()
      .nullable()
      .describe('For threshold: the amount owed to one address that sends it, in USDC (major units).'),
    updated_at: z.string().nullable().describe('When it was last set; null on the default.'),
  })
  .describe("The account's settlement schedule for one mode.");

const policyResponse = z.object({
  object: z.literal('policy'),
  version: z.number().describe('0 while the account runs on the defaults; +1 on every PUT.'),
  policy: PolicyViewSchema,
  updated_at: z.string().nullable().describe('When the policy was last saved; null on the defaults.'),
  updated: z.string().nullable().describe('Deprecated: updated_at. Removed in the next release.'),
});

export const policyOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/policy',
    operationId: 'get_policy',
    summary: 'Read the money-movement policy',
    tag: 'policy',
    scope: 'policy',
    response: policyResponse,
  },
  {
    method: 'PUT',
    path: '/v1/policy',
    operationId: 'put_policy',
    summary: 'Replace the money-movement policy',
    description: 'Replaces the whole policy (every field required) and returns the new version. See docs/policy.md.',
    tag: 'policy',
    scope: 'policy',
    body: PolicySchema,
    response: policyResponse,
  },
  {
    method: 'GET',
    path: '/v1/settlement_schedule',
    operationId: 'get_settlement_schedule',
    summary: 'Read the settlement schedule',
    tag: 'policy',
    scope: 'policy',
    response: settlementScheduleResponse,
  },
  {
    method: 'PUT',
    path: '/v1/settlement_schedule',
    operationId: 'put_settlement_schedule',
    summary: 'Set the settlement schedule',
    description:
      "Sets when paid payments created from now on settle on-chain, for the key's mode: instant (default), hourly, daily or threshold. See docs/settlement.md.",
    tag: 'policy',
    scope: 'policy',
    body: SettlementScheduleSchema,
    response: settlementScheduleResponse,
  },
];

function present(stored: StoredPolicy) {
  return {
    object: 'policy' as const,
    version: stored.version,
    policy: policyToJson(stored.policy),
    updated_at: stored.updatedAt?.toISOString() ?? null,
    updated: stored.updatedAt?.toISOString() ?? null,
  };
}

export function policyRoutes(
  services: Pick<ApiServices, 'db' | 'clock'>,
  tools: readonly AnyTool[],
): FastifyPluginAsync {
  return async (app) => {
    app.get('/v1/policy', { config: { auth: { scope: 'policy' } } }, async (request) => {
      const { accountId, livemode } = requestAuth(request);
      return present(await loadPolicy(services.db, { accountId, livemode }));
    });
    app.put('/v1/policy', { config: { auth: { scope: 'policy' } } }, async (request) => {
      const auth = requestAuth(request);
      const policy = parsePolicy(request.body, { knownTools: tools.map((t) => t.name) });
      const saved = await services.db
        .transaction()
        .execute((trx) =>
          savePolicy(
            trx,
            { accountId: auth.accountId, livemode: auth.livemode },
            policy,
            auth.keyId,
            services.clock.now(),
          ),
        );
      return present(saved);
    });
    app.get('/v1/settlement_schedule', { config: { auth: { scope: 'policy' } } }, async (request) => {
      const { accountId, livemode } = requestAuth(request);
      return presentSettlementSchedule(await loadSettlementSchedule(services.db, { accountId, livemode }), livemode);
    });
    app.put('/v1/settlement_schedule', { config: { auth: { scope: 'policy' } } }, async (request) => {
      const auth = requestAuth(request);
      const value = parseSettlementSchedule(request.body);
      const owner = { accountId: auth.accountId, livemode: auth.livemode };
      const saved = await saveSettlementSchedule(services.db, owner, value, auth.keyId, services.clock.now());
      return presentSettlementSchedule(saved, auth.livemode);
    });
  };
}
