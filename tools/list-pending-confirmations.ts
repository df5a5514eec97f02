import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { pageParams } from '../src/db/pagination.ts';
import { listConfirmationsPage } from '../src/db/repositories/confirmations.ts';
import { confirmationOutput, presentConfirmation } from '../src/policy/confirmations.ts';

export const listPendingConfirmations = defineTool({
  name: 'list_pending_confirmations',
  title: 'List actions awaiting approval',
  description:
    'Lists the actions the policy held for a human, still pending, newest first. Approving is not a tool: a person approves with an approvals key (POST /v1/confirmations/:id/approve) or on the dashboard.',
  input: z.strictObject(pageParams('confirmation', 'conf_…')),
  output: z.object({
    object: z.literal('list'),
    data: z.array(confirmationOutput),
    has_more: z.boolean().describe('True when more pending confirmations follow in the direction you paged.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/confirmations' },
  async handler(input, { config, db, actor, now }) {
    const page = await listConfirmationsPage(db, actor, 'pending', input, now);
    return {
      object: 'list' as const,
      data: page.data.map((row) => presentConfirmation(config, row, now)),
      has_more: page.has_more,
    };
  },
});
