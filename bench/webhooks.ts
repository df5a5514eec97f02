// Webhook delay (issue 10): from the commit of a payment.settled event to the first delivery
// attempt arriving at the merchant's endpoint. The real service (`plainpay serve`, all roles: API,
// settlement and delivery workers) runs in a child process on a scratch Postgres database with
// WEBHOOK_ALLOW_PRIVATE=1; the receiver is an HTTP server on 127.0.0.1 in this process. Payments
// without a payout address are paid on the sandbox rail one by one at a steady pace; the settlement
// worker settles each into the custodial balance (no chain transfer) and writes payment.settled in
// that transaction; the delivery worker posts it. Delay = arrival at the receiver − the event's
// `created` (stamped in the settling transaction, just before its commit; both clocks are this
// machine's). The baseline is the floor: the same body POSTed straight to the same receiver.

import { request as httpRequest, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BenchResult, BenchRow } from './run.ts';
import { callApi, machineNote, percentile, setUpDatabase, sortedNumbers, startPlainpay } from './support.ts';

const PAYMENTS = 100;
/** One payment paid every PACE_MS: a steady trickle, so that each delay is one event's, not a queue's. */
const PACE_MS = 100;

interface Arrival {
  at: number;
  type: string;
  eventId: string;
  created: number;
  paymentId: string;
  body: string;
  signed: boolean;
}

/** Wall-clock milliseconds with sub-millisecond resolution. */
const nowMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function startReceiver() {
  const arrivals: Arrival[] = [];
  const direct = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = nowMs();
      const body = Buffer.concat(chunks).toString('utf8');
      const probeId = req.headers['x-bench-probe'];
      if (typeof probeId === 'string') {
        direct.set(probeId, at);
      } else {
        const event = JSON.parse(body) as {
          id: string;
          type: string;
          created: string;
          data: { object: { id: string } };
        };
        arrivals.push({
          at,
          type: event.type,
          eventId: event.id,
          created: Date.parse(event.created),
          paymentId: event.data.object.id,
          body,
          signed: typeof req.headers['webhook-signature'] === 'string',
        });
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    arrivals,
    direct,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One POST of `body` on a new connection, as the delivery worker sends one. */
function post(url: string, body: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export async function webhooksBench(): Promise<BenchResult> {
  const machine = machineNote();
  const setup = await setUpDatabase('webhooks');
  const receiver = await startReceiver();
  try {
    const service = await startPlainpay(setup, 'all', { WEBHOOK_ALLOW_PRIVATE: '1' });
    try {
      const ids: string[] = [];
      for (let i = 0; i < PAYMENTS; i++) {
        const payment = await callApi(service.url, setup.apiKey, 'POST', '/v1/payments', {
          amount: 5000 + i,
          currency: 'NGN',
          redirect_url: 'https://shop.example/thanks',
          reference: `bench-${i}`,
          metadata: { order: `order_${i}` },
          webhook_url: receiver.url,
        });
        ids.push(String(payment.id));
      }
      const started = performance.now();
      for (const [i, id] of ids.entries()) {
        await callApi(service.url, setup.apiKey, 'POST', `/v1/test_helpers/payments/${id}/pay`, {
          outcome: 'succeeded',
        });
        const next = started + (i + 1) * PACE_MS;
        await sleep(Math.max(0, next - performance.now()));
      }
      const deadline = performance.now() + 60_000;
      while (receiver.arrivals.filter((a) => a.type === 'payment.settled').length < PAYMENTS) {
        if (performance.now() > deadline || service.server.child.exitCode !== null) {
          throw new Error(
            `${receiver.arrivals.filter((a) => a.type === 'payment.settled').length} of ${PAYMENTS} payment.settled events arrived in time:\n${service.server.output()}`,
          );
        }
        await sleep(20);
      }
    } finally {
      await service.server.stop();
    }

    // The first attempt of each event only (the receiver answers 200, so there should be no other).
    const first = new Map<string, Arrival>();
    for (const a of receiver.arrivals) if (!first.has(a.eventId)) first.set(a.eventId, a);
    const delays = (type: string) =>
      sortedNumbers([...first.values()].filter((a) => a.type === type).map((a) => a.at - a.created));
    const settled = delays('payment.settled');
    const paid = delays('payment.paid');
    const paidAt = new Map([...first.values()].filter((a) => a.type === 'payment.paid').map((a) => [a.paymentId, a]));
    const settleLag = sortedNumbers(
      [...first.values()]
        .filter((a) => a.type === 'payment.settled' && paidAt.has(a.paymentId))
        .map((a) => a.created - paidAt.get(a.paymentId)!.created),
    );

    // The floor, measured after: the same bytes POSTed straight to the same receiver, same pace.
    const sample = [...first.values()].find((a) => a.type === 'payment.settled')!.body;
    const floor: number[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const probeId = `probe-${i}`;
      const sent = nowMs();
      await post(receiver.url, sample, { 'x-bench-probe': probeId });
      floor.push(receiver.direct.get(probeId)! - sent);
      await sleep(PACE_MS / 10);
    }
    const direct = sortedNumbers(floor);

    const round = (v: number): number => Math.round(v * 100) / 100;
    const baseline: BenchRow = {
      label: 'direct POST, send → arrival p50',
      value: round(percentile(direct, 50)),
      unit: 'ms',
    };
    const directP99: BenchRow = {
      label: 'direct POST, send → arrival p99',
      value: round(percentile(direct, 99)),
      unit: 'ms',
    };
    const row = (label: string, values: number[], p: 50 | 99): BenchRow => ({
      label,
      value: round(percentile(values, p)),
      unit: 'ms',
      against: p === 50 ? baseline : directP99,
    });
    const attempts = receiver.arrivals.length;
    return {
      title: `webhooks: ${PAYMENTS} payments paid ${1000 / PACE_MS}/s and settled into the balance; delay from event commit to first delivery attempt (plainpay serve on Postgres)`,
      baseline,
      rows: [
        directP99,
        row('payment.settled commit → first attempt p50 (× direct p50)', settled, 50),
        row('payment.settled commit → first attempt p99 (× direct p99)', settled, 99),
        row('payment.paid commit → first attempt p50 (× direct p50)', paid, 50),
        row('payment.paid commit → first attempt p99 (× direct p99)', paid, 99),
      ],
      notes: [
        machine,
        'setup: plainpay serve (all roles, LOG_LEVEL=warn) in a child process on a scratch Postgres database; receiver on 127.0.0.1 in the bench process',
        'the delivery worker wakes on the NOTIFY a new delivery row sends at commit (migration 022), with a 10 s safety poll: no poll interval is waited',
        `paid → settled (settlement worker, polls every 50 ms): p50 ${round(percentile(settleLag, 50))} ms, p99 ${round(percentile(settleLag, 99))} ms`,
        `receiver: ${attempts} requests for ${first.size} events (${settled.length} payment.settled, ${paid.length} payment.paid)`,
      ],
      checks: [
        {
          label: `every payment's payment.settled reached the receiver (${settled.length}/${PAYMENTS})`,
          pass: settled.length === PAYMENTS,
        },
        { label: 'every delivery was signed', pass: receiver.arrivals.every((a) => a.signed) },
        { label: 'one attempt per event (the receiver answered 200)', pass: attempts === first.size },
      ],
    };
  } finally {
    await receiver.close();
    await setup.database.drop();
  }
}
