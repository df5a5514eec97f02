import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config.ts';
import { AppError } from '../core/errors.ts';
import { findAccount } from '../db/repositories/accounts.ts';
import { PROVIDER_RAIL_NAMES, type ProviderRail } from '../db/tables/rails.ts';
import {
  adoptMerchantCollection,
  type CollectionAccount,
  listCollections,
  type MpesaCredentials,
  parseRailCredentials,
  retireCollection,
  setOperatorCollection,
} from '../payments/rails/collections.ts';
import { publicBaseUrlProblem } from '../payments/rails/mpesa.ts';
import { type DatabaseCommand, type DatabaseWork, parseStrict, required } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

/**
 * `plainpay collection …`: the operator's collection accounts (docs/rails.md, "Who collects").
 * The provider credentials payers' money is collected with belong to whoever runs the instance:
 * they are set here, never with a merchant's API key or dashboard session.
 */

const json = { type: 'boolean', default: false } as const;
const JSON_HELP = '  --json              Print the result as JSON, and errors as JSON on stderr.';
const TARGET_HELP = `  --live              Live mode (default: test mode).
  --account ID        Only for this account (acct_…); default: every account of the mode that has none of its own.`;

export const collectionList: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Options:\n${JSON_HELP}\n\nOne line per collection account: id, rail, mode, whose payments it collects, owner, state. Never a secret.`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { json } }));
    return async ({ db }, out) => {
      const accounts = await listCollections(db);
      if (values.json) out.stdout(JSON.stringify({ object: 'list', data: accounts.map(view), has_more: false }));
      else if (accounts.length === 0) out.stdout('No collection account: no provider rail collects yet.');
      else for (const a of accounts) out.stdout(line(a));
      return EXIT.ok;
    };
  },
};

export const collectionSet: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Usage: plainpay collection set paystack|mpesa --credentials FILE [--live] [--account ID] [--json]

Options:
  --credentials FILE  A JSON file with the provider credentials (kept off the command line):
                      paystack: {"secret_key": "sk_live_…", "public_key": "pk_live_…"}
                      mpesa:    {"consumer_key": "…", "consumer_secret": "…", "shortcode": "…",
                                 "passkey": "…", "environment": "production", "transaction_type":
                                 "CustomerPayBillOnline", "party_b": "…"}
${TARGET_HELP}
${JSON_HELP}

The secret is sealed with the instance master key and never shown again. Setting a rail again
replaces its collection account for new attempts; attempts already made keep the one they paid into.
Paystack: set the webhook URL of the same mode on Paystack's dashboard to {PUBLIC_BASE_URL}/hooks/paystack.
M-Pesa: Daraja posts results to {PUBLIC_BASE_URL}/hooks/stk/…, so PUBLIC_BASE_URL must be HTTPS on a
public host for --live, and free of the words Safaricom refuses in URLs (mpesa, safaricom, sql, …).`,
  parse(args) {
    const { values, positionals } = parseStrict(() =>
      parseArgs({
        args,
        allowPositionals: true,
        options: {
          credentials: { type: 'string' },
          live: { type: 'boolean', default: false },
          account: { type: 'string' },
          json,
        },
      }),
    );
    const rail = railOf(positionals, 'plainpay collection set paystack --credentials paystack.json');
    const file = resolve(
      required(values.credentials, 'credentials', 'plainpay collection set paystack --credentials paystack.json'),
    );
    const credentials = parseRailCredentials(rail, values.live, readCredentials(file));
    const work: DatabaseWork = async ({ db, secretBox, clock, config }, out) => {
      // Daraja posts each push's result to a URL on PUBLIC_BASE_URL: one it refuses (a word it
      // forbids, plain http in production) would leave every payer's result unheard.
      const problem =
        rail === 'mpesa'
          ? publicBaseUrlProblem(config.publicBaseUrl, (credentials as MpesaCredentials).environment)
          : undefined;
      if (problem) throw new ConfigError([problem]);
      const accountId = await accountOf(db, values.account);
      const set = await setOperatorCollection(
        db,
        secretBox,
        { rail, livemode: values.live, accountId },
        credentials,
        clock.now(),
      );
      out.stdout(values.json ? JSON.stringify(view(set)) : `Set ${line(set)}`);
      return EXIT.ok;
    };
    // Inside a running serve the file is read again, from its absolute path.
    work.argv = [
      'collection',
      'set',
      rail,
      `--credentials=${file}`,
      ...(values.live ? ['--live'] : []),
      ...(values.account === undefined ? [] : ['--account', values.account]),
      ...(values.json ? ['--json'] : []),
    ];
    return work;
  },
};

export const collectionRemove: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Usage: plainpay collection remove paystack|mpesa [--live] [--account ID] [--json]

Options:
${TARGET_HELP}
${JSON_HELP}

New checkouts stop offering the rail (for that account: the instance-wide account collects again,
if there is one). Attempts and refunds already made through it are still followed up.`,
  parse(args) {
    const { values, positionals } = parseStrict(() =>
      parseArgs({
        args,
        allowPositionals: true,
        options: { live: { type: 'boolean', default: false }, account: { type: 'string' }, json },
      }),
    );
    const rail = railOf(positionals, 'plainpay collection remove paystack --live');
    return async ({ db, clock }, out) => {
      const accountId = await accountOf(db, values.account);
      const removed = await retireCollection(db, { rail, livemode: values.live, accountId }, clock.now());
      if (!removed) {
        throw new AppError(
          'not_found',
          `No ${rail} collection account in ${values.live ? 'live' : 'test'} mode${accountId ? ` for ${accountId}` : ' for every account'}.`,
        );
      }
      out.stdout(values.json ? JSON.stringify(view(removed)) : `Removed ${line(removed)}`);
      return EXIT.ok;
    };
  },
};

export const collectionAdopt: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Usage: plainpay collection adopt COLLECTION_ID [--json]

Takes over a provider credential a merchant connected before collection became the operator's
(owner "merchant" in \`plainpay collection list\`). Only do this when the money collected there is
yours, the operator's: a merchant running its own instance, say. Otherwise remove it
(\`plainpay collection remove … --account …\`) and collect with your own integration.
Options:
${JSON_HELP}`,
  parse(args) {
    const { values, positionals } = parseStrict(() => parseArgs({ args, allowPositionals: true, options: { json } }));
    const id = positionals[0];
    if (!id || positionals.length > 1)
      throw new UsageError('Name one collection account: plainpay collection adopt col_…');
    return async ({ db, clock }, out) => {
      const adopted = await adoptMerchantCollection(db, id, clock.now());
      if (!adopted) throw new AppError('not_found', `No active merchant-owned collection account '${id}'.`);
      out.stdout(values.json ? JSON.stringify(view(adopted)) : `Adopted ${line(adopted)}`);
      return EXIT.ok;
    };
  },
};

function railOf(positionals: string[], example: string): ProviderRail {
  const [rail, ...rest] = positionals;
  if (rail === undefined || rest.length > 0 || !(PROVIDER_RAIL_NAMES as readonly string[]).includes(rail)) {
    throw new UsageError(`Name the rail, ${PROVIDER_RAIL_NAMES.join(' or ')}: ${example}`, { param: 'rail' });
  }
  return rail as ProviderRail;
}

function readCredentials(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--credentials ${file} cannot be read: ${(error as Error).message}`, { param: 'credentials' });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--credentials ${file} is not JSON.`, { param: 'credentials' });
  }
}

async function accountOf(db: Parameters<typeof findAccount>[0], accountId: string | undefined): Promise<string | null> {
  if (accountId === undefined) return null;
  if (!(await findAccount(db, accountId)))
    throw new AppError('not_found', `No account '${accountId}'.`, { param: 'account' });
  return accountId;
}

function view(a: CollectionAccount) {
  return {
    id: a.id,
    object: 'collection_account',
    rail: a.rail,
    livemode: a.livemode,
    account: a.accountId,
    owner: a.owner,
    settings: a.settings,
    refused_currencies: a.refusedCurrencies,
    created: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
    retired_at: a.retiredAt?.toISOString() ?? null,
  };
}

function line(a: CollectionAccount): string {
  const state = a.retiredAt
    ? `removed ${a.retiredAt.toISOString()}`
    : a.owner === 'operator'
      ? 'collecting'
      : 'NOT collecting (merchant-owned: adopt or remove)';
  const refused = a.refusedCurrencies.length > 0 ? `  refused: ${a.refusedCurrencies.join(',')}` : '';
  return `${a.id}  ${a.rail}  ${a.livemode ? 'live' : 'test'}  ${a.accountId ?? 'every account'}  ${a.owner}  ${state}${refused}`;
}
