import type { FastifyPluginAsync } from 'fastify';
import { presentVerification, verificationOutput, verifyAccount } from '../../audit/verification.ts';
import type { ApiServices } from './services.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

export const auditOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/audit/verify',
    operationId: 'verify_audit_log',
    summary: "Verify the account's action log",
    description:
      "Recomputes the hash chain of the account's action log and checks that the actions, their confirmations, runs and key labels that GET /agent/actions, its CSV and the dashboard show still match what the log recorded, and that each transaction hash shown is the settlement batch's. Answers 200 either way: `ok` says which, `broken` names the first row edited, added or missing. The dashboard's Actions screen shows the last result. Scope `agent`, the scope that reads the log it verifies.",
    tag: 'agent',
    scope: 'agent',
    response: verificationOutput,
  },
];

export function auditRoutes(services: Pick<ApiServices, 'db' | 'clock'>): FastifyPluginAsync {
  return async (app) => {
    app.get('/v1/audit/verify', { config: { auth: { scope: 'agent' } } }, async (request) => {
      const auth = requestAuth(request);
      const stored = await verifyAccount(services.db, auth.accountId, services.clock.now());
      return presentVerification(stored, auth.livemode);
    });
  };
}
