import { parseArgs } from 'node:util';
import { startStdioBridge } from '../mcp/stdio-bridge.ts';

const DEFAULT_URL = 'http://localhost:3000/mcp';
const USAGE = `Usage: PLAINPAY_API_KEY=sk_test_... plainpay mcp [--url ${DEFAULT_URL}]

Serves MCP over stdio for desktop assistants, relaying to a running plainpay server's /mcp
endpoint with the API key as bearer. stdout carries only the protocol; messages go to stderr.
See docs/mcp.md for a ready-to-paste client configuration.`;

/**
 * `plainpay mcp`: the stdio bridge (mcp/stdio-bridge.ts). A client-side command: it needs no
 * database or service configuration, only the endpoint and a key. The key comes from the
 * environment (the env block of the assistant's config), never from argv, where `ps` shows it.
 */
export async function mcpCommand(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { url: { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    console.error(USAGE);
    return 0;
  }
  const apiKey = env.PLAINPAY_API_KEY?.trim();
  if (!apiKey) {
    console.error(`PLAINPAY_API_KEY is not set: put the API key in the environment of this command.\n\n${USAGE}`);
    return 2;
  }
  let url: URL;
  try {
    url = new URL(values.url ?? DEFAULT_URL);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    console.error(`--url must be an http(s) URL such as ${DEFAULT_URL}.\n\n${USAGE}`);
    return 2;
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
  return 0;
}
