import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { confirmationOutput, presentConfirmation } from '../src/policy/confirmations.ts';

export const listPendingConfirmations = defineTool({
  name: 'list_pending_confirmations',
  title: 'List actions awaiting approval',
  description:
    'Lists the actions the policy held for a human, still pending, newest first. Approving is not a tool: a person approves with an approvals key (POST /v1/confirmations/:id/approve) or on the dashboard.',
  input: z.strictObject({}),
  output: z.object({ object: z.literal('list'), data: z.array(confirmationOutput), has_more: z.boolean() }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/confirmations' },
  async handler(_input, { runtime, db, actor, now }) {
    const rows = await db
      .selectFrom('confirmations')
      .selectAll()
      .where('account_id', '=', actor.accountId)
      .where('livemode', '=', actor.livemode)
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(101)
      .execute();
    return {
      object: 'list' as const,
      data: rows.slice(0, 100).map((row) => presentConfirmation(runtime.config, row, now)),
      has_more: rows.length > 100,
    };
  },
});
