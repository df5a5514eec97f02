import type { SecretBox } from '../core/secret-box.ts';
import type { Database } from '../db/database.ts';
import { insertAccount } from '../db/repositories/accounts.ts';
import { insertWebhookSecret } from '../db/repositories/webhook-secrets.ts';
import { newId } from '../domain/ids.ts';
import { issueApiKey } from '../keys/api-keys.ts';
import { generateWebhookSecret } from '../webhooks/signer.ts';
import type { Kysely } from 'kysely';

export interface CreatedAccount {
  account: string;
  api_key: string;
  webhook_secret: string;
}

/**
 * Creates an account with a first secret key holding every scope and a webhook signing secret for
 * each mode, in one transaction. The key and the secret of the key's mode are returned here once;
 * the other mode's secret is read with a key of that mode (GET /v1/webhook_secret).
 */
export async function createAccount(
  db: Kysely<Database>,
  secretBox: SecretBox,
  input: { name: string; livemode: boolean; feeBps?: number },
): Promise<CreatedAccount> {
  return db.transaction().execute(async (trx) => {
    const account = await insertAccount(trx, { id: newId('acct'), name: input.name, feeBps: input.feeBps });
    const key = await issueApiKey(trx, { accountId: account.id, livemode: input.livemode, name: 'first key' });
    const secrets = { test: generateWebhookSecret(), live: generateWebhookSecret() };
    for (const livemode of [false, true]) {
      await insertWebhookSecret(trx, {
        id: newId('whsec'),
        accountId: account.id,
        livemode,
        secretCiphertext: secretBox.seal(livemode ? secrets.live : secrets.test),
      });
    }
    return {
      account: account.id,
      api_key: key.secret,
      webhook_secret: input.livemode ? secrets.live : secrets.test,
    };
  });
}
