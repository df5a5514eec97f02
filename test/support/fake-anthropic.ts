import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for the Anthropic Messages API (POST /v1/messages), driven by the real SDK
 * through baseURL. Each scripted turn sees the request and returns a message; requests are kept
 * for assertions. Only the edge is fake: the SDK, the loop and the pipeline are real.
 */
export interface RecordedRequest {
  headers: Record<string, string | string[] | undefined>;
  body: {
    model: string;
    system: Array<{ type: string; text: string; cache_control?: unknown }>;
    tools: Array<{ name: string; description: string; input_schema: unknown; cache_control?: unknown }>;
    messages: Array<{ role: string; content: unknown }>;
    max_tokens: number;
  };
}

export type ScriptedTurn = (request: RecordedRequest) => {
  content: Array<{ type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown }>;
  stop_reason: 'end_turn' | 'tool_use';
  usage?: Partial<{
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens: number;
    cache_creation_input_tokens: number;
  }>;
};

export interface FakeAnthropic {
  url: string;
  requests: RecordedRequest[];
  script(turns: ScriptedTurn[]): void;
  close(): Promise<void>;
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const requests: RecordedRequest[] = [];
  let turns: ScriptedTurn[] = [];
  let counter = 0;
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/messages') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not found' } }));
        return;
      }
      const recorded: RecordedRequest = { headers: req.headers, body: JSON.parse(raw) };
      requests.push(recorded);
      const turn = turns.shift();
      if (!turn) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'script exhausted' } }));
        return;
      }
      const out = turn(recorded);
      counter += 1;
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_fake_${counter}` });
      res.end(
        JSON.stringify({
          id: `msg_fake_${counter}`,
          type: 'message',
          role: 'assistant',
          model: recorded.body.model,
          content: out.content,
          stop_reason: out.stop_reason,
          stop_sequence: null,
          usage: {
            input_tokens: 100,
            output_tokens: 20,
            cache_read_input_tokens: counter > 1 ? 900 : 0,
            cache_creation_input_tokens: counter === 1 ? 900 : 0,
            ...out.usage,
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(next) {
      turns = [...next];
      requests.length = 0;
      counter = 0;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The last tool_result blocks the model was sent. */
export function lastToolResults(
  request: RecordedRequest,
): Array<{ tool_use_id: string; content: string; is_error?: boolean }> {
  const last = request.body.messages.at(-1);
  return Array.isArray(last?.content)
    ? (last.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>)
    : [];
}
