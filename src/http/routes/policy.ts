import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { AnyTool } from '../../core/tool.ts';
import { parsePolicy, PolicySchema } from '../../policy/policy-schema.ts';
import { loadPolicy, savePolicy, type StoredPolicy } from '../../policy/store.ts';
import type { Runtime } from '../../runtime.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

const policyResponse = z.object({
  object: z.literal('policy'),
  version: z.number().describe('0 while the account runs on the defaults; +1 on every PUT.'),
  policy: PolicySchema,
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
];

function present(stored: StoredPolicy) {
  return {
    object: 'policy' as const,
    version: stored.version,
    policy: stored.policy,
    updated_at: stored.updatedAt?.toISOString() ?? null,
    updated: stored.updatedAt?.toISOString() ?? null,
  };
}

export function policyRoutes(runtime: Runtime, tools: readonly AnyTool[]): FastifyPluginAsync {
  return async (app) => {
    app.get('/v1/policy', { config: { auth: { scope: 'policy' } } }, async (request) => {
      const { accountId, livemode } = requestAuth(request);
      return present(await loadPolicy(runtime.db, { accountId, livemode }));
    });
    app.put('/v1/policy', { config: { auth: { scope: 'policy' } } }, async (request) => {
      const auth = requestAuth(request);
      const policy = parsePolicy(request.body, { knownTools: tools.map((t) => t.name) });
      const saved = await runtime.db
        .transaction()
        .execute((trx) =>
          savePolicy(
            trx,
            { accountId: auth.accountId, livemode: auth.livemode },
            policy,
            auth.keyId,
            runtime.clock.now(),
          ),
        );
      return present(saved);
    });
  };
}
