import { parseArgs } from 'node:util';
import type { Config } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { findAccount } from '../db/repositories/accounts.ts';
import { API_KEY_SCOPES, type ApiKeyScope } from '../domain/api-key-secret.ts';
import { issueApiKey, listAccountApiKeys, revokeAccountApiKey } from '../keys/api-keys.ts';
import { createRuntime } from '../runtime.ts';

const USAGE =
  'Usage: plainpay keys list|create|revoke --account ID [--live] [--scopes a,b] [--name N] [--id KEY_ID] [--json]';

export async function keysCommand(config: Config, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseArgs({
    args: rest,
    options: {
      account: { type: 'string' },
      live: { type: 'boolean', default: false },
      scopes: { type: 'string' },
      name: { type: 'string' },
      id: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (!sub || !['list', 'create', 'revoke'].includes(sub) || !values.account) {
    console.error(USAGE);
    return 2;
  }
  const scopes = values.scopes?.split(',').map((s) => s.trim());
  const unknown = scopes?.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s)) ?? [];
  if (unknown.length > 0) {
    console.error(`Unknown scope(s): ${unknown.join(', ')}. Known scopes: ${API_KEY_SCOPES.join(', ')}.`);
    return 2;
  }
  const runtime = await createRuntime(config, { logger: createLogger('warn') });
  try {
    if (!(await findAccount(runtime.db, values.account))) {
      console.error(`No account '${values.account}'.`);
      return 1;
    }
    if (sub === 'list') {
      const keys = await listAccountApiKeys(runtime.db, values.account, null);
      if (values.json) console.log(JSON.stringify(keys));
      else
        for (const k of keys)
          console.log(
            `${k.id}  ${k.redacted}  ${k.livemode ? 'live' : 'test'}  ${k.revoked ? 'revoked' : 'active'}  ${k.scopes.join(',')}`,
          );
      return 0;
    }
    if (sub === 'create') {
      const key = await issueApiKey(runtime.db, {
        accountId: values.account,
        livemode: values.live,
        scopes: scopes as ApiKeyScope[] | undefined,
        name: values.name ?? null,
      });
      console.log(values.json ? JSON.stringify(key) : `${key.id}  ${key.secret}   (shown once)`);
      return 0;
    }
    if (!values.id) {
      console.error('--id is required for revoke');
      return 2;
    }
    // The operator at the CLI is trusted: no managing key to check.
    const revoked = await revokeAccountApiKey(runtime.db, values.account, values.id, runtime.clock.now(), null);
    console.log(values.json ? JSON.stringify(revoked) : `Revoked ${revoked.id} (${revoked.redacted}).`);
    return 0;
  } finally {
    await runtime.close();
  }
}
