import type { FastifyInstance } from 'fastify';

export const MCP_PROTOCOL_VERSION = '2025-06-18';
export const MCP_ACCEPT = 'application/json, text/event-stream';

/**
 * Opens an MCP session on `/mcp` by raw JSON-RPC through app.inject (initialize, then the
 * initialized notification) and returns the headers every later request of the session carries.
 * For tests that need the wire itself; the others use the SDK's Client.
 */
export async function openInjectedMcpSession(
  app: FastifyInstance,
  key: string,
  clientName = 'test',
): Promise<Record<string, string>> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: MCP_ACCEPT };
  const init = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers,
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: MCP_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: clientName, version: '1' },
      },
    }),
  });
  const id = init.headers['mcp-session-id'];
  if (init.statusCode !== 200 || typeof id !== 'string') {
    throw new Error(`MCP initialize failed: ${init.statusCode} ${init.body}`);
  }
  const session = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': MCP_PROTOCOL_VERSION };
  await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: session,
    payload: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  return session;
}
