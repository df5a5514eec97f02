import { parseArgs } from 'node:util';
import { startStdioBridge } from '../mcp/stdio-bridge.ts';
import { type ClientCommand, parseStrict } from './command.ts';
import { EXIT, UsageError } from './failures.ts';

const DEFAULT_URL = 'http://localhost:3000/mcp';

/**
 * `plainpay mcp`: the stdio bridge (mcp/stdio-bridge.ts). A client-side command: it needs no
 * database or service configuration, only the endpoint and a key. The key comes from the
 * environment (the env block of the assistant's config), never from argv, where `ps` shows it.
 * stdout carries only the protocol: everything this command says goes to stderr.
 */
export const mcp: ClientCommand = {
  kind: 'client',
  help: `Options:
  --url URL        The running plainpay server's MCP endpoint (default: ${DEFAULT_URL}).

Serves MCP over stdio for desktop assistants, relaying to a running plainpay server's /mcp
endpoint with the API key in PLAINPAY_API_KEY as bearer:
  PLAINPAY_API_KEY=sk_test_... plainpay mcp --url ${DEFAULT_URL}
stdout carries only the protocol; messages go to stderr.
See docs/mcp.md for a ready-to-paste client configuration.`,
  parse(args) {
    const { values } = parseStrict(() => parseArgs({ args, options: { url: { type: 'string' } } }));
    const url = parseEndpoint(values.url ?? DEFAULT_URL);
    return async (env) => {
      const apiKey = env.PLAINPAY_API_KEY?.trim();
      if (!apiKey) {
        throw new UsageError('PLAINPAY_API_KEY is not set: put the API key in the environment of this command.', {
          param: 'PLAINPAY_API_KEY',
        });
      }
      const bridge = await startStdioBridge({ url, apiKey });
      const stop = (): void => {
        void bridge.close();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await bridge.closed;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      return EXIT.ok;
    };
  },
};

function parseEndpoint(text: string): URL {
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  } catch {
    // reported below, as for any other scheme
  }
  throw new UsageError(`--url must be an http(s) URL such as ${DEFAULT_URL}.`, { param: 'url' });
}
