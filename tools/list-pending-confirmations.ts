import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { pageParams } from '../src/db/pagination.ts';
import { type ConfirmationFilter, listConfirmationsPage } from '../src/db/repositories/confirmations.ts';
import { confirmationOutput, presentConfirmation } from '../src/policy/confirmations.ts';

const STATUS_FILTERS = [
  'pending',
  'executed',
  'rejected',
  'expired',
  'all',
] as const satisfies readonly ConfirmationFilter[];

export const listPendingConfirmations = defineTool({
  name: 'list_pending_confirmations',
  title: 'List actions awaiting approval',
  description:
    'Lists the actions the policy held for a human, newest first: those still pending unless status asks for others (executed, rejected, expired, or all). Approving is not a tool: a person approves with an approvals key (POST /v1/confirmations/:id/approve) or on the dashboard.',
  input: z.strictObject({
    status: z
      .enum(STATUS_FILTERS, { error: `status must be one of ${STATUS_FILTERS.join(', ')}` })
      .default('pending')
      .describe(
        'Only confirmations in this status as it stands now: pending (the default: still waiting and not lapsed), executed, rejected, expired (lapsed undecided), or all.',
      ),
    ...pageParams('confirmation', 'conf_…'),
  }),
  output: z.object({
    object: z.literal('list'),
    data: z.array(confirmationOutput),
    has_more: z.boolean().describe('True when more confirmations follow in the direction you paged.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/confirmations' },
  async handler({ status, ...request }, { config, db, actor, now }) {
    const page = await listConfirmationsPage(db, actor, status, request, now);
    return {
      object: 'list' as const,
      data: page.data.map((row) => presentConfirmation(config, row, now)),
      has_more: page.has_more,
    };
  },
});
