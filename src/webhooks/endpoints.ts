// Account webhook endpoints, as Stripe has them: a URL, the event types it wants, its own signing
// secret, enabled or disabled. They add targets to the one delivery machinery (insertEvent writes
// a delivery per subscribed endpoint; the worker signs with the endpoint's secret); nothing here
// sends anything. Used by the API (http/routes/webhook-endpoints.ts) and the dashboard.

import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Db, ModeScope } from '../db/database.ts';
import { lockAccount } from '../db/repositories/accounts.ts';
import {
  countWebhookEndpoints,
  insertWebhookEndpoint,
  type WebhookEndpointRow,
} from '../db/repositories/webhook-endpoints.ts';
import { newId } from '../domain/ids.ts';
import { ALL_EVENT_TYPES, EVENT_TYPES } from './event-types.ts';
import { generateWebhookSecret } from './signer.ts';
import { type ValidateWebhookUrlOptions, validateWebhookUrl, WEBHOOK_URL_MAX_LENGTH } from './webhook-url.ts';

/** Each endpoint multiplies every event's deliveries: a mode of an account has at most this many. */
export const MAX_WEBHOOK_ENDPOINTS = 16;

export const endpointUrlSchema = z
  .string()
  .min(1)
  .max(WEBHOOK_URL_MAX_LENGTH)
  .describe(
    'Where events are POSTed: an http(s) URL on a public address (loopback, private, link-local and metadata addresses are refused).',
  );

export const enabledEventsSchema = z
  .array(
    z.enum([ALL_EVENT_TYPES, ...EVENT_TYPES], {
      // The input may be any JSON (an object whose toString is not a function): name it safely.
      error: (issue) =>
        `unknown event type ${typeof issue.input === 'string' ? `'${issue.input}'` : JSON.stringify(issue.input)}; use one of ${EVENT_TYPES.join(', ')}, or "*"`,
    }),
  )
  .min(1, 'needs at least one event type, or ["*"] for all')
  .max(EVENT_TYPES.length + 1)
  .refine((types) => types.length === 1 || !types.includes(ALL_EVENT_TYPES), '"*" means every type: send it alone')
  .describe(
    `The event types it receives, or ["*"] for every type (also types added later): ${EVENT_TYPES.join(', ')}.`,
  );

export const endpointDescriptionSchema = z
  .string()
  .max(200)
  .describe('Your note on what the endpoint is for (at most 200 characters).');

export type WebhookEndpointStatus = 'enabled' | 'disabled';

export interface WebhookEndpointView {
  id: string;
  object: 'webhook_endpoint';
  url: string;
  enabled_events: string[];
  description: string | null;
  status: WebhookEndpointStatus;
  livemode: boolean;
  created: string;
  updated_at: string;
}

export function presentWebhookEndpoint(row: WebhookEndpointRow): WebhookEndpointView {
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    enabled_events: row.enabled_events,
    description: row.description,
    status: row.disabled ? 'disabled' : 'enabled',
    livemode: row.livemode,
    created: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * The registration-time check a payment's webhook_url gets (webhook-url.ts), refused as a 400
 * naming `url`. Run it before the transaction: it may wait for DNS. Delivery checks again at
 * connect time whatever passed here.
 */
export async function assertEndpointUrl(url: string, options: ValidateWebhookUrlOptions): Promise<void> {
  const verdict = await validateWebhookUrl(url, options);
  if (!verdict.ok) {
    throw new AppError('invalid_request', `${verdict.message.replace(/^webhook_url/, 'url')}.`, { param: 'url' });
  }
}

/** A subscription as stored: each type once. */
export function normaliseEnabledEvents(types: readonly string[]): string[] {
  return [...new Set(types)];
}

/**
 * Creates an endpoint with a new secret and returns it with the secret, the one time it is shown
 * (it is stored sealed, like the account's secrets). Run in a transaction: the account row is
 * locked so concurrent creations cannot pass the limit together.
 */
export async function createWebhookEndpoint(
  trx: Db,
  box: SecretBox,
  input: ModeScope & {
    url: string;
    enabledEvents: readonly string[];
    description: string | null;
    disabled: boolean;
    now: Date;
  },
): Promise<WebhookEndpointView & { secret: string }> {
  await lockAccount(trx, input.accountId);
  if ((await countWebhookEndpoints(trx, input)) >= MAX_WEBHOOK_ENDPOINTS) {
    throw new AppError(
      'invalid_request',
      `This account already has ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints in this mode; delete one first.`,
    );
  }
  const secret = generateWebhookSecret();
  const row = await insertWebhookEndpoint(trx, {
    accountId: input.accountId,
    livemode: input.livemode,
    id: newId('we'),
    url: input.url,
    enabledEvents: normaliseEnabledEvents(input.enabledEvents),
    description: input.description,
    disabled: input.disabled,
    secretCiphertext: box.seal(secret),
    now: input.now,
  });
  return { ...presentWebhookEndpoint(row), secret };
}
