import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import { parseInput } from '../../core/validation.ts';
import type { Db, ModeScope } from '../../db/database.ts';
import type { ProviderRail } from '../../db/tables/rails.ts';

/**
 * A merchant's provider credentials, per account, mode and rail (docs/rails.md). The secret part is
 * sealed with the instance master key, like webhook secrets; only `settings` (what identifies the
 * integration without unlocking it) is ever shown back. A mode takes only its own kind of key:
 * live keys on live mode, test keys on test mode, so a test key handed to a developer can never
 * move real money and a live key is never used for a test checkout.
 */

export const paystackCredentialsInput = z.strictObject({
  secret_key: z
    .string({ error: 'secret_key is required: the Paystack secret key (sk_test_… or sk_live_…)' })
    .regex(/^sk_(test|live)_[A-Za-z0-9]{10,100}$/, 'secret_key must be a Paystack secret key (sk_test_… or sk_live_…)')
    .describe("Your Paystack secret key. It signs Paystack's events to plainpay and authorises its API calls."),
  public_key: z
    .string()
    .regex(/^pk_(test|live)_[A-Za-z0-9]{10,100}$/, 'public_key must be a Paystack public key (pk_test_… or pk_live_…)')
    .optional()
    .describe('Your Paystack public key (optional; shown back to identify the integration).'),
});

export const mpesaCredentialsInput = z.strictObject({
  consumer_key: z.string().min(8).max(200).describe("Your Daraja app's consumer key."),
  consumer_secret: z.string().min(8).max(200).describe("Your Daraja app's consumer secret."),
  shortcode: z
    .string()
    .regex(/^\d{5,7}$/, 'shortcode must be your M-Pesa business shortcode (5 to 7 digits)')
    .describe('The paybill or till shortcode payers pay (BusinessShortCode).'),
  passkey: z.string().min(16).max(200).describe('The Lipa na M-Pesa Online passkey for the shortcode.'),
  environment: z
    .enum(['sandbox', 'production'], { error: "environment must be 'sandbox' or 'production'" })
    .describe("Daraja's sandbox (test mode only) or production (live mode only)."),
  transaction_type: z
    .enum(['CustomerPayBillOnline', 'CustomerBuyGoodsOnline'])
    .default('CustomerPayBillOnline')
    .describe('CustomerPayBillOnline for a paybill, CustomerBuyGoodsOnline for a till.'),
  party_b: z
    .string()
    .regex(/^\d{5,7}$/, 'party_b must be 5 to 7 digits')
    .optional()
    .describe('The till number that receives the money, when it differs from the shortcode (Buy Goods).'),
});

export type PaystackCredentials = z.output<typeof paystackCredentialsInput>;
export type MpesaCredentials = z.output<typeof mpesaCredentialsInput>;
export interface RailCredentials {
  paystack: PaystackCredentials;
  mpesa: MpesaCredentials;
}

const INPUTS = { paystack: paystackCredentialsInput, mpesa: mpesaCredentialsInput } as const;

/** What is shown back of a rail's credentials: never a secret, only enough to recognise them. */
function settingsOf(rail: ProviderRail, credentials: PaystackCredentials | MpesaCredentials): Record<string, unknown> {
  if (rail === 'paystack') {
    const c = credentials as PaystackCredentials;
    return { secret_key_last4: c.secret_key.slice(-4), public_key: c.public_key ?? null };
  }
  const c = credentials as MpesaCredentials;
  return {
    shortcode: c.shortcode,
    environment: c.environment,
    transaction_type: c.transaction_type,
    party_b: c.party_b ?? c.shortcode,
    consumer_key_last4: c.consumer_key.slice(-4),
  };
}

/** Validates credentials for one mode: the field and the rule named on any problem. */
export function parseRailCredentials<R extends ProviderRail>(
  rail: R,
  livemode: boolean,
  body: unknown,
): RailCredentials[R] {
  const parsed = parseInput(INPUTS[rail], body) as RailCredentials[R];
  if (rail === 'paystack') {
    const c = parsed as PaystackCredentials;
    const live = c.secret_key.startsWith('sk_live_');
    if (live !== livemode) {
      throw new AppError(
        'invalid_request',
        livemode
          ? 'secret_key must be a live Paystack key (sk_live_…) for live mode: test keys connect with a test-mode API key.'
          : 'secret_key must be a test Paystack key (sk_test_…) for test mode: live keys connect with a live-mode API key.',
        { param: 'secret_key' },
      );
    }
    if (c.public_key && c.public_key.startsWith('pk_live_') !== livemode) {
      throw new AppError('invalid_request', 'public_key must be of the same mode as secret_key.', {
        param: 'public_key',
      });
    }
  } else {
    const c = parsed as MpesaCredentials;
    if ((c.environment === 'production') !== livemode) {
      throw new AppError(
        'invalid_request',
        livemode
          ? "environment must be 'production' for live mode: the Daraja sandbox moves no real money."
          : "environment must be 'sandbox' for test mode: production moves real money, so it connects with a live-mode API key.",
        { param: 'environment' },
      );
    }
  }
  return parsed;
}

export interface RailConnection {
  rail: ProviderRail;
  livemode: boolean;
  settings: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export async function saveRailCredentials(
  db: Db,
  box: SecretBox,
  scope: ModeScope,
  rail: ProviderRail,
  credentials: PaystackCredentials | MpesaCredentials,
  now: Date,
): Promise<RailConnection> {
  const settings = JSON.stringify(settingsOf(rail, credentials));
  const sealed = box.seal(JSON.stringify(credentials));
  const row = await db
    .insertInto('rail_credentials')
    .values({
      account_id: scope.accountId,
      livemode: scope.livemode,
      rail,
      settings,
      secret_ciphertext: sealed,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc
        .columns(['account_id', 'livemode', 'rail'])
        .doUpdateSet({ settings, secret_ciphertext: sealed, updated_at: now }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
  return toConnection(row);
}

export async function listRailConnections(db: Db, scope: ModeScope): Promise<RailConnection[]> {
  const rows = await db
    .selectFrom('rail_credentials')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .orderBy('rail')
    .execute();
  return rows.map(toConnection);
}

export async function deleteRailCredentials(db: Db, scope: ModeScope, rail: ProviderRail): Promise<boolean> {
  const result = await db
    .deleteFrom('rail_credentials')
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('rail', '=', rail)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The rail's credentials for this account and mode, opened; undefined when not connected. */
export async function loadRailCredentials<R extends ProviderRail>(
  db: Db,
  box: SecretBox,
  scope: ModeScope,
  rail: R,
): Promise<RailCredentials[R] | undefined> {
  const row = await db
    .selectFrom('rail_credentials')
    .select('secret_ciphertext')
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('rail', '=', rail)
    .executeTakeFirst();
  if (!row) return undefined;
  return INPUTS[rail].parse(JSON.parse(box.open(row.secret_ciphertext))) as RailCredentials[R];
}

/** Which provider rails this account has connected in this mode. */
export async function connectedRails(db: Db, scope: ModeScope): Promise<Set<ProviderRail>> {
  const rows = await db
    .selectFrom('rail_credentials')
    .select('rail')
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .execute();
  return new Set(rows.map((r) => r.rail));
}

function toConnection(row: {
  rail: ProviderRail;
  livemode: boolean;
  settings: unknown;
  created_at: Date;
  updated_at: Date;
}): RailConnection {
  return {
    rail: row.rail,
    livemode: row.livemode,
    settings: row.settings as Record<string, unknown>,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
