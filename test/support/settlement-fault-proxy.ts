// A JSON-RPC proxy for fault tests: it forwards to a node and spoils a share of the calls, the ways a
// real RPC provider does. Loopback only; every delay is bounded.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault =
  /** 503 at once, nothing forwarded (the provider refuses). */
  | 'refuse'
  /** Forwarded and executed by the node, then the connection is cut: the caller cannot know. */
  | 'lose_answer'
  /** Held, then the connection is cut, nothing forwarded (a timeout). */
  | 'timeout'
  /** Forwarded and answered, late. */
  | 'slow';

const FAULTS: readonly Fault[] = ['refuse', 'lose_answer', 'timeout', 'slow'];

export interface FaultProxy {
  url: string;
  /** Calls seen, and how many of each fault were injected, by JSON-RPC method. */
  stats: { calls: number; faulted: number; byFault: Record<Fault, number>; byMethod: Record<string, number> };
  close(): Promise<void>;
}

export async function startFaultProxy(
  upstream: string,
  options: { rate: number; maxDelayMs: number; random?: () => number },
): Promise<FaultProxy> {
  const random = options.random ?? Math.random;
  const stats: FaultProxy['stats'] = {
    calls: 0,
    faulted: 0,
    byFault: { refuse: 0, lose_answer: 0, timeout: 0, slow: 0 },
    byMethod: {},
  };
  const delay = (): Promise<void> =>
    new Promise((resolve) => setTimeout(resolve, Math.floor(random() * options.maxDelayMs)));

  const forward = async (body: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: res.status, text: await res.text() };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    stats.calls += 1;
    let fault: Fault | undefined;
    // Deterministic share: a call is spoiled whenever the spoiled count falls a whole call behind
    // rate × calls, so exactly `rate` of the calls fail, spread evenly; which fault, and the delays,
    // stay random. (A coin flip per call made the observed share itself a flaky number.)
    if (stats.calls * options.rate - stats.faulted >= 1) {
      fault = FAULTS[Math.floor(random() * FAULTS.length)]!;
      stats.faulted += 1;
      stats.byFault[fault] += 1;
      try {
        const parsed = JSON.parse(body) as { method?: string } | { method?: string }[];
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
          const method = call.method ?? '?';
          stats.byMethod[method] = (stats.byMethod[method] ?? 0) + 1;
        }
      } catch {
        // not JSON: counted above all the same
      }
    }
    switch (fault) {
      case 'refuse':
        res.writeHead(503, { 'content-type': 'text/plain' }).end('unavailable');
        return;
      case 'timeout':
        await delay();
        res.socket?.destroy();
        return;
      case 'lose_answer':
        await forward(body).catch(() => undefined);
        res.socket?.destroy();
        return;
      case 'slow': {
        await delay();
        const answer = await forward(body);
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.text);
        return;
      }
      default: {
        const answer = await forward(body);
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.text);
      }
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
