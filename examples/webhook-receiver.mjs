// A plainpay webhook receiver on the public `standardwebhooks` package (npm i standardwebhooks).
//
//   WEBHOOK_SECRET=whsec_… PORT=4242 node examples/webhook-receiver.mjs
//
// Get the secret with GET /v1/webhook_secret. It verifies every delivery from the RAW body,
// dedupes by event id, answers 2xx fast, and prints one JSON line per request (tests read them).
// docs/webhooks.md walks through it.

import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.WEBHOOK_SECRET);
const seen = new Set(); // In production: a unique index on the event id in your database.

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks).toString('utf8'); // The exact bytes that were signed.
  let event;
  try {
    event = webhook.verify(body, req.headers); // Checks the signature and a ±5 min timestamp window.
  } catch (error) {
    log({ verified: false, error: error.message });
    res.writeHead(400).end();
    return;
  }
  const duplicate = seen.has(event.id);
  seen.add(event.id);
  log({ verified: true, id: event.id, type: event.type, duplicate, data: event.data });
  if (!duplicate) handle(event);
  res.writeHead(204).end();
});

/** Your business logic. A settled payment is the signal to fulfil the order, not the browser redirect. */
function handle(event) {
  if (event.type === 'payment.settled') {
    // e.g. mark order event.data.reference as paid, using event.data.metadata.
  }
}

function log(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

server.listen(Number(process.env.PORT ?? 4242), process.env.HOST ?? '127.0.0.1', () => {
  log({ listening: server.address().port });
});
