import { parseArgs } from 'node:util';
import { AppError } from '../core/errors.ts';
import type { Db } from '../db/database.ts';
import { findAccount } from '../db/repositories/accounts.ts';
import { API_KEY_SCOPES, type ApiKeyScope } from '../domain/api-key-secret.ts';
import { issueApiKey, listAccountApiKeys, revokeAccountApiKey } from '../keys/api-keys.ts';
import { type DatabaseCommand, parseStrict, required } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

const account = { type: 'string' } as const;
const json = { type: 'boolean', default: false } as const;
const ACCOUNT_HELP = '  --account ID     The account (acct_…); required.';
const JSON_HELP = '  --json           Print the result as JSON, and errors as JSON on stderr.';

export const keysList: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Options:\n${ACCOUNT_HELP}\n${JSON_HELP}\n\nOne line per key: id, redacted secret, mode, state, scopes, and "assistant" for an assistant's key. Both modes are listed. --json prints the list as GET /keys does: {"object":"list","data":[…],"has_more":false}.`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { account, json } }));
    const accountId = required(values.account, 'account', 'plainpay keys list --account acct_…');
    return async ({ db }, out) => {
      await requireAccount(db, accountId);
      const keys = await listAccountApiKeys(db, accountId, null);
      // The list as GET /keys answers it (here both modes' keys, on one page).
      if (values.json) out.stdout(JSON.stringify({ object: 'list', data: keys, has_more: false }));
      else
        for (const k of keys)
          out.stdout(
            `${k.id}  ${k.redacted}  ${k.livemode ? 'live' : 'test'}  ${k.revoked_at ? 'revoked' : 'active'}  ${k.scopes.join(',')}${k.assistant ? '  assistant' : ''}`,
          );
      return EXIT.ok;
    };
  },
};

export const keysCreate: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Options:
${ACCOUNT_HELP}
  --live           A live-mode key (default: test mode).
  --scopes a,b     The key's scopes (default: every scope): ${API_KEY_SCOPES.join(', ')}.
  --name N         A name to tell the key apart.
  --assistant      A key for an AI assistant: every call made with it (REST, MCP, the agent) is
                   judged by the policy's mcp limits as well (docs/policy.md).
${JSON_HELP}`,
  parse(args) {
    const { values } = parseStrict(() =>
      parseArgs({
        args,
        options: {
          account,
          live: { type: 'boolean', default: false },
          scopes: { type: 'string' },
          name: { type: 'string' },
          assistant: { type: 'boolean', default: false },
          json,
        },
      }),
    );
    const accountId = required(values.account, 'account', 'plainpay keys create --account acct_…');
    const scopes = values.scopes === undefined ? undefined : parseScopes(values.scopes);
    return async ({ db }, out) => {
      await requireAccount(db, accountId);
      const key = await issueApiKey(db, {
        accountId,
        livemode: values.live,
        scopes,
        name: values.name ?? null,
        assistant: values.assistant,
      });
      out.stdout(values.json ? JSON.stringify(key) : `${key.id}  ${key.secret}   (shown once)`);
      return EXIT.ok;
    };
  },
};

export const keysRevoke: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Options:
${ACCOUNT_HELP}
  --id KEY_ID      The key to revoke (key_…, as \`plainpay keys list\` shows); required.
${JSON_HELP}

Works while \`plainpay serve\` runs: requests with the key are refused from the next one on.`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { account, id: { type: 'string' }, json } }));
    const accountId = required(values.account, 'account', 'plainpay keys revoke --account acct_… --id key_…');
    const keyId = required(values.id, 'id', 'plainpay keys revoke --account acct_… --id key_…');
    return async ({ db, clock }, out) => {
      await requireAccount(db, accountId);
      // The operator at the CLI is trusted: no managing key to check.
      const revoked = await revokeAccountApiKey(db, accountId, keyId, clock.now(), null);
      out.stdout(values.json ? JSON.stringify(revoked) : `Revoked ${revoked.id} (${revoked.redacted}).`);
      return EXIT.ok;
    };
  },
};

function parseScopes(text: string): ApiKeyScope[] {
  const scopes = text.split(',').map((s) => s.trim());
  const unknown = scopes.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) {
    throw new UsageError(`Unknown scope(s): ${unknown.join(', ')}. Known scopes: ${API_KEY_SCOPES.join(', ')}.`, {
      param: 'scopes',
    });
  }
  return scopes as ApiKeyScope[];
}

async function requireAccount(db: Db, accountId: string): Promise<void> {
  if (!(await findAccount(db, accountId))) {
    throw new AppError('not_found', `No account '${accountId}'.`, { param: 'account' });
  }
}
