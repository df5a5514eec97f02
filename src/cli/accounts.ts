import { parseArgs } from 'node:util';
import { createAccount } from '../accounts/create-account.ts';
import type { Config } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { createRuntime } from '../runtime.ts';

export async function accountsCommand(config: Config, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create') {
    console.error('Usage: plainpay accounts create --name NAME [--live] [--json]');
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      name: { type: 'string' },
      live: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  if (!values.name) {
    console.error('--name is required: plainpay accounts create --name "Ada\'s Shop"');
    return 2;
  }
  const runtime = await createRuntime(config, { logger: createLogger('warn') });
  try {
    const created = await createAccount(runtime.db, runtime.secretBox, { name: values.name, livemode: values.live });
    if (values.json) {
      console.log(JSON.stringify(created));
    } else {
      console.log(`Account:        ${created.account}`);
      console.log(`API key:        ${created.api_key}   (shown once; every scope)`);
      console.log(`Webhook secret: ${created.webhook_secret}`);
    }
    return 0;
  } finally {
    await runtime.close();
  }
}
