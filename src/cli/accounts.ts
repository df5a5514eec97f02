import { parseArgs } from 'node:util';
import { createAccount } from '../accounts/create-account.ts';
import { type DatabaseCommand, parseStrict, required } from './command.ts';
import { EXIT } from './failures.ts';

export const accountsCreate: DatabaseCommand = {
  kind: 'database',
  needsLatestSchema: true,
  help: `Options:
  --name NAME      The account's name; required.
  --live           Make the first key a live-mode key (default: test mode).
  --json           Print exactly {"account","api_key","webhook_secret"}, and errors as JSON on stderr.

The API key (every scope) and the webhook signing secret of its mode are printed once.`,
  parse(args) {
    const { values } = parseStrict(() =>
      parseArgs({
        args,
        options: {
          name: { type: 'string' },
          live: { type: 'boolean', default: false },
          json: { type: 'boolean', default: false },
        },
      }),
    );
    const name = required(values.name, 'name', 'plainpay accounts create --name "Ada\'s Shop"');
    return async ({ db, secretBox }, out) => {
      const created = await createAccount(db, secretBox, { name, livemode: values.live });
      if (values.json) {
        out.stdout(JSON.stringify(created));
      } else {
        out.stdout(`Account:        ${created.account}`);
        out.stdout(`API key:        ${created.api_key}   (shown once; every scope)`);
        out.stdout(`Webhook secret: ${created.webhook_secret}`);
      }
      return EXIT.ok;
    };
  },
};
