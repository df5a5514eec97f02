import { z } from 'zod';
import type { ApprovalAttempt } from '../src/audit/actions.ts';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import type { Db } from '../src/db/database.ts';
import { listFailedStepPayloads } from '../src/db/repositories/action-log.ts';
import { findHeldActionId } from '../src/db/repositories/agent-actions.ts';
import { findConfirmation } from '../src/db/repositories/confirmations.ts';
import { findScopedStatus } from '../src/db/repositories/scoped.ts';
import type { ConfirmationRow } from '../src/db/tables/money.ts';
import { type ConfirmationView, confirmationOutput, presentConfirmation } from '../src/policy/confirmations.ts';

const createdObject = z
  .object({
    id: z.string().describe('Its id, e.g. po_… for a payout.'),
    object: z.string().describe('What it is: payout, refund or revenue_share.'),
    status: z
      .string()
      .nullable()
      .describe(
        'Its status now (a payout: queued, settled or failed; a refund: pending, succeeded or failed); null for a revenue share, whose legs are payouts.',
      ),
  })
  .describe('What the approved action created.');

const runError = z
  .object({
    type: z.string(),
    code: z.string().optional(),
    message: z.string(),
    param: z.string().optional(),
  })
  .describe('An API error object.');

export const getConfirmation = defineTool({
  name: 'get_confirmation',
  title: 'Get a held action',
  description:
    'Reads one action the policy held for a person to approve (the confirmation_id a held money call returned): whether it is still waiting, was approved and executed, was rejected or expired, why an approved run failed, and what it created (for example the payout; read it with get_payout for its transaction).',
  input: z.strictObject({
    confirmation_id: z
      .string({ error: 'confirmation_id must be a string' })
      .min(1)
      .max(100)
      .describe('The held action (conf_…), as a money call that was held returned it.'),
  }),
  output: confirmationOutput.extend({
    outcome: z.string().describe('How it ended, or what it is waiting for, in one sentence for the user.'),
    error: runError
      .nullable()
      .describe(
        'Why the last approved run of it failed (it then stays pending and nothing moved), or null when none did.',
      ),
    created_object: createdObject
      .nullable()
      .describe('What it created once approved and executed; null before that, and when rejected or expired.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/confirmations/:confirmation_id' },
  async handler({ confirmation_id }, { config, db, actor, now }) {
    const row = await findConfirmation(db, actor, confirmation_id);
    if (!row) {
      throw new AppError('not_found', `No such confirmation: '${confirmation_id}'.`, { param: 'confirmation_id' });
    }
    const view = presentConfirmation(config, row, now);
    const error = view.status === 'pending' ? await lastRunError(db, row) : null;
    const created = view.status === 'executed' ? await createdBy(db, row) : null;
    return { ...view, outcome: outcomeOf(view, error, created), error, created_object: created };
  },
});

type RunError = z.output<typeof runError>;
type Created = z.output<typeof createdObject>;

/**
 * An approved run that fails rolls its transaction back, so the confirmation stays pending; the
 * attempt is a step in the action log (audit/actions.ts recordFailedAttempt) carrying its error.
 */
async function lastRunError(db: Db, row: ConfirmationRow): Promise<RunError | null> {
  // By the held action's id (indexed), payloads read in JS: a JSON operator in SQL would fail on a
  // payload that holds a \u0000 escape, which callers' text may.
  const held = await findHeldActionId(db, { accountId: row.account_id, livemode: row.livemode }, row.id);
  if (!held) return null;
  const entries = await listFailedStepPayloads(db, row.account_id, held.id);
  for (const entry of entries) {
    const attempt = (entry.payload as { attempt?: ApprovalAttempt } | null)?.attempt;
    if (attempt?.confirmation_id !== row.id) continue;
    const parsed = runError.safeParse(attempt.error);
    return parsed.success ? parsed.data : null;
  }
  return null;
}

/** The object the executed tool returned, with its status as it stands now (a payout settles later). */
async function createdBy(db: Db, row: ConfirmationRow): Promise<Created | null> {
  const result = row.result as { id?: unknown; object?: unknown } | null;
  if (typeof result?.id !== 'string' || typeof result.object !== 'string') return null;
  const table = result.object === 'payout' ? 'payouts' : result.object === 'refund' ? 'refunds' : undefined;
  if (table === undefined) return { id: result.id, object: result.object, status: null };
  const scope = { accountId: row.account_id, livemode: row.livemode };
  const status = await findScopedStatus(db, table, scope, result.id);
  return { id: result.id, object: result.object, status: status ?? null };
}

function outcomeOf(view: ConfirmationView, error: RunError | null, created: Created | null): string {
  switch (view.status) {
    case 'pending':
      return error
        ? `An approval ran and failed (${error.message}); nothing moved, and it still waits for a person to approve it at ${view.approve_url} before ${view.expires_at}.`
        : `Waiting for a person to approve or reject it at ${view.approve_url} before ${view.expires_at}; nothing has moved yet. Ask again later to learn how it ended.`;
    case 'executed':
      return created
        ? `Approved at ${view.decided_at} and executed: it created ${created.object} ${created.id}${created.status ? ` (${created.status} now)` : ''}.`
        : `Approved at ${view.decided_at} and executed.`;
    case 'rejected':
      return `Rejected by a person at ${view.decided_at}: nothing moved.`;
    case 'expired':
      return `Nobody decided before ${view.expires_at}, so it lapsed: nothing moved. Make the call again if it is still wanted.`;
  }
}
