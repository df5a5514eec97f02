import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import { parseInput } from '../../core/validation.ts';
import type { Db, ModeScope } from '../../db/database.ts';
import {
  adoptMerchantCollectionAccount,
  addRefusedCurrency,
  type CollectionAccountRow,
  type CollectionTarget,
  creditsWithoutOperatorCollection,
  findActiveOperatorCollectionAccount,
  findCollectionAccountById,
  insertCollectionAccount,
  listCollectionAccounts,
  retireActiveCollectionAccounts,
} from '../../db/repositories/collection-accounts.ts';
import type { CollectionOwner, ProviderRail } from '../../db/tables/rails.ts';
import { newId } from '../../domain/ids.ts';

/**
 * Collection accounts (docs/rails.md, "Who collects"): the provider integrations payers' money is
 * collected into. They belong to the operator: set from the CLI (`plainpay collection set`), one
 * instance-wide per rail and mode, or one for a single account where the operator sets one; never
 * by a merchant's API key or dashboard session, since a merchant collecting into its own provider
 * account would be paid twice (the local money, and the stablecoin from the operator's treasury).
 *
 * The secret part is sealed with the instance master key, like webhook secrets; only `settings`
 * (what identifies the integration without unlocking it) is ever shown back. A mode takes only
 * its own kind of key: live keys on live mode, test keys on test mode.
 *
 * A collection account is never edited in place: setting a new one retires the old, and an
 * attempt keeps the one it was paid into, so its verification and refunds use the integration
 * that actually holds the money.
 */

export const paystackCredentialsInput = z.strictObject({
  secret_key: z
    .string({ error: 'secret_key is required: the Paystack secret key (sk_test_… or sk_live_…)' })
    .regex(/^sk_(test|live)_[A-Za-z0-9]{10,100}$/, 'secret_key must be a Paystack secret key (sk_test_… or sk_live_…)')
    .describe("The Paystack secret key. It signs Paystack's events to plainpay and authorises its API calls."),
  public_key: z
    .string()
    .regex(/^pk_(test|live)_[A-Za-z0-9]{10,100}$/, 'public_key must be a Paystack public key (pk_test_… or pk_live_…)')
    .optional()
    .describe('The Paystack public key (optional; shown back to identify the integration).'),
});

export const mpesaCredentialsInput = z.strictObject({
  consumer_key: z.string().min(8).max(200).describe("The Daraja app's consumer key."),
  consumer_secret: z.string().min(8).max(200).describe("The Daraja app's consumer secret."),
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
          ? 'secret_key must be a live Paystack key (sk_live_…) for live mode.'
          : 'secret_key must be a test Paystack key (sk_test_…) for test mode.',
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
          : "environment must be 'sandbox' for test mode: production moves real money, so it collects in live mode only.",
        { param: 'environment' },
      );
    }
  }
  return parsed;
}

/** A collection account as shown to the operator: never a secret. */
export interface CollectionAccount {
  id: string;
  rail: ProviderRail;
  livemode: boolean;
  /** null: collects for every account of the mode that has none of its own. */
  accountId: string | null;
  owner: CollectionOwner;
  settings: Record<string, unknown>;
  refusedCurrencies: string[];
  createdAt: Date;
  updatedAt: Date;
  retiredAt: Date | null;
}

/** A collection account with its credentials opened, for a provider call. */
export interface OpenCollection<R extends ProviderRail = ProviderRail> {
  account: CollectionAccount;
  credentials: RailCredentials[R];
}

/**
 * The operator sets the collection account of a rail and mode: instance-wide (accountId null) or
 * for one account. The one it replaces (the operator's own, or a merchant's from before) is retired.
 */
export async function setOperatorCollection(
  db: Db,
  box: SecretBox,
  target: CollectionTarget,
  credentials: PaystackCredentials | MpesaCredentials,
  now: Date,
): Promise<CollectionAccount> {
  return db.transaction().execute(async (trx) => {
    await retireActiveCollectionAccounts(trx, target, now);
    const row = await insertCollectionAccount(trx, {
      id: newId('col'),
      rail: target.rail,
      livemode: target.livemode,
      account_id: target.accountId,
      owner: 'operator',
      settings: JSON.stringify(settingsOf(target.rail, credentials)),
      secret_ciphertext: box.seal(JSON.stringify(credentials)),
      created_at: now,
      updated_at: now,
    });
    return toCollection(row);
  });
}

/** The operator stops a collection account collecting: new checkouts no longer offer it. */
export async function retireCollection(
  db: Db,
  target: CollectionTarget,
  now: Date,
): Promise<CollectionAccount | undefined> {
  const [row] = await retireActiveCollectionAccounts(db, target, now);
  return row ? toCollection(row) : undefined;
}

/**
 * The operator takes over a credential a merchant connected before collection became the
 * operator's: it says the money collected there is the operator's (a self-hosting merchant that
 * runs its own instance, say), and from then on it collects for that account.
 */
export async function adoptMerchantCollection(db: Db, id: string, now: Date): Promise<CollectionAccount | undefined> {
  const row = await adoptMerchantCollectionAccount(db, id, now);
  return row ? toCollection(row) : undefined;
}

/** Every collection account, the retired ones last; optionally only one owner's, or only active ones. */
export async function listCollections(
  db: Db,
  filter: { owner?: CollectionOwner; active?: boolean; livemode?: boolean } = {},
): Promise<CollectionAccount[]> {
  return (await listCollectionAccounts(db, filter)).map(toCollection);
}

/**
 * The operator's collection account that takes this account's payments on this rail and mode:
 * the account's own, else the instance-wide one; undefined when the operator set neither. Its
 * credentials stay sealed (a checkout page only needs to know the rail is offered).
 */
export async function collectionAccountFor(
  db: Db,
  scope: ModeScope,
  rail: ProviderRail,
): Promise<CollectionAccount | undefined> {
  const row = await findActiveOperatorCollectionAccount(db, scope, rail);
  return row ? toCollection(row) : undefined;
}

/** collectionAccountFor, with its credentials opened for a provider call. */
export async function collectionFor<R extends ProviderRail>(
  db: Db,
  box: SecretBox,
  scope: ModeScope,
  rail: R,
): Promise<OpenCollection<R> | undefined> {
  const row = await findActiveOperatorCollectionAccount(db, scope, rail);
  return row ? open(box, row) : undefined;
}

/** The collection account an attempt was paid into, retired or not, whoever owns it. */
export async function collectionById<R extends ProviderRail>(
  db: Db,
  box: SecretBox,
  id: string,
): Promise<OpenCollection<R> | undefined> {
  const row = await findCollectionAccountById(db, id);
  return row ? open(box, row) : undefined;
}

/** The provider refused this currency for the integration: the rail is no longer offered in it. */
export async function markCurrencyRefused(db: Db, id: string, currency: string, now: Date): Promise<void> {
  await addRefusedCurrency(db, id, currency, now);
}

function open<R extends ProviderRail>(box: SecretBox, row: CollectionAccountRow): OpenCollection<R> {
  return {
    account: toCollection(row),
    credentials: INPUTS[row.rail].parse(JSON.parse(box.open(row.secret_ciphertext))) as RailCredentials[R],
  };
}

function toCollection(row: CollectionAccountRow): CollectionAccount {
  return {
    id: row.id,
    rail: row.rail,
    livemode: row.livemode,
    accountId: row.account_id,
    owner: row.owner,
    settings: row.settings as Record<string, unknown>,
    refusedCurrencies: row.refused_currencies as string[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    retiredAt: row.retired_at,
  };
}

/**
 * At start: a merchant-owned credential from before collection became the operator's collects
 * nothing, and the operator must decide about it (adopt it as the operator's own, or remove it).
 * A live one stops the start until that is done, since its merchant's live checkouts would
 * silently stop offering the rail; a test one is only warned about.
 */
export async function refuseMerchantCollection(db: Db, warn: (message: string) => void): Promise<void> {
  const merchant = await listCollections(db, { owner: 'merchant', active: true });
  const describe = (a: CollectionAccount) => `${a.id} (${a.rail}, ${a.accountId})`;
  const live = merchant.filter((a) => a.livemode);
  const test = merchant.filter((a) => !a.livemode);
  if (test.length > 0) {
    warn(
      `${test.length} test-mode payer rail(s) connected by merchants collect nothing since collection became the operator's: ${test.map(describe).join(', ')}. Adopt or remove them (plainpay collection adopt|remove; docs/rails.md, "Moving to operator collection").`,
    );
  }
  if (live.length > 0) {
    throw new AppError(
      'conflict',
      `Not starting: ${live.length} live payer rail(s) were connected by merchants with their own provider credentials: ${live.map(describe).join(', ')}. A merchant collecting into its own account would be credited twice (its local money, and the stablecoin from your treasury), so they no longer collect. For each, either adopt it if the money collected there is yours (plainpay collection adopt COLLECTION_ID), or remove it (plainpay collection remove RAIL --live --account ACCOUNT_ID) and collect with your own integration (plainpay collection set RAIL --live --credentials FILE). See docs/rails.md, "Moving to operator collection".`,
    );
  }
}

// The collection invariant's query lives beside its table; the daily reconciliation and the tests'
// check below read it from here, with the rest of what collection accounts mean.
export {
  type CreditWithoutOperatorCollection,
  creditsWithoutOperatorCollection,
} from '../../db/repositories/collection-accounts.ts';

/** The collection invariant as lines for a test's failure message (at most 50). */
export async function checkCollectionInvariant(db: Db): Promise<string[]> {
  const rows = await creditsWithoutOperatorCollection(db, { limit: 50 });
  return rows.map(
    (r) =>
      `${r.id} (${r.livemode ? 'live' : 'test'}) was credited without a success collected into an operator-owned collection account`,
  );
}
