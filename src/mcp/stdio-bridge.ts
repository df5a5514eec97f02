import { type Readable, Transform, type Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type InitializeRequest,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { JsonNumber, parseJson, writesANumberAsNotItsDouble } from '../core/json-text.ts';

export interface StdioBridgeOptions {
  /** The server's Streamable HTTP endpoint, e.g. http://localhost:3000/mcp. */
  url: URL;
  /** The API key sent as the bearer on every request. */
  apiKey: string;
  stdin?: Readable;
  stdout?: Writable;
  /** Diagnostics (stderr by default): stdout carries only the protocol. */
  log?: (line: string) => void;
}

export interface StdioBridge {
  /** Resolves when the client closes stdin or close() is called; the session is ended first. */
  closed: Promise<void>;
  close(): Promise<void>;
}

/** What the bridge sends on its own: a session re-opened after the server forgot the old one. */
const REINIT_PREFIX = 'plainpay-bridge-reinit-';
/** JSON-RPC error code (implementation-defined server error range) for "the HTTP server refused". */
const UPSTREAM_ERROR = -32000;

/**
 * `plainpay mcp`: desktop assistants speak MCP over stdio; this relays every JSON-RPC message,
 * unchanged, to a running server's Streamable HTTP endpoint with the API key as bearer, and
 * every message from the server back. The server does all the work (auth, scopes, policy, log).
 *
 * Sessions: the server closes sessions that sit idle. When it answers 404 for ours, the bridge
 * opens a new one by replaying the client's own initialize request, then resends the message, so
 * a desktop assistant left open overnight keeps working.
 */
export async function startStdioBridge(options: StdioBridgeOptions): Promise<StdioBridge> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  const lines = relayableLines(stdout, log);
  stdin.pipe(lines);
  const stdio = new StdioServerTransport(lines, stdout);
  let initialize: (InitializeRequest & { id: RequestId }) | undefined;
  let reinitCount = 0;
  const reinitWaiters = new Map<RequestId, (message: JSONRPCMessage) => void>();
  let reconnecting: Promise<void> | undefined;
  let closing = false;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => {
    resolveClosed = resolve;
  });

  const connectHttp = async (): Promise<StreamableHTTPClientTransport> => {
    const transport = new StreamableHTTPClientTransport(options.url, {
      requestInit: { headers: { Authorization: `Bearer ${options.apiKey}` } },
    });
    transport.onmessage = (message) => {
      const id = 'id' in message ? message.id : undefined;
      const waiter = id === undefined ? undefined : reinitWaiters.get(id);
      if (waiter) {
        waiter(message);
        return;
      }
      if (initialize && isJSONRPCResultResponse(message) && message.id === initialize.id) {
        const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
        if (typeof version === 'string') transport.setProtocolVersion(version);
      }
      stdio.send(message).catch((error: unknown) => log(`plainpay mcp: could not write to stdout: ${describe(error)}`));
    };
    transport.onerror = (error) => {
      if (!closing) log(`plainpay mcp: ${describe(error)}`);
    };
    await transport.start();
    return transport;
  };
  let http = await connectHttp();

  const reopenSession = async (): Promise<void> => {
    if (!initialize) throw new Error('no session to reopen: the client has not initialized');
    const old = http;
    old.onmessage = undefined;
    old.onerror = undefined;
    await old.close().catch(() => undefined);
    http = await connectHttp();
    const id = `${REINIT_PREFIX}${++reinitCount}`;
    const answered = new Promise<JSONRPCMessage>((resolve) => reinitWaiters.set(id, resolve));
    try {
      await http.send({ jsonrpc: '2.0', id, method: 'initialize', params: initialize.params });
      const answer = await answered;
      if (isJSONRPCErrorResponse(answer))
        throw new Error(`the server refused to reopen the session: ${answer.error.message}`);
      if (isJSONRPCResultResponse(answer)) {
        const version = (answer.result as { protocolVersion?: unknown }).protocolVersion;
        if (typeof version === 'string') http.setProtocolVersion(version);
      }
      await http.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      log('plainpay mcp: the server had closed the session; opened a new one.');
    } finally {
      reinitWaiters.delete(id);
    }
  };

  const refuse = refusal(stdio, options.url, log);
  const forward = async (message: JSONRPCMessage): Promise<void> => {
    if (reconnecting) await reconnecting.catch(() => undefined);
    const opening = isInitializeRequest(message) && isJSONRPCRequest(message);
    if (opening) initialize = message;
    try {
      await http.send(message);
    } catch (error) {
      if (error instanceof StreamableHTTPError && error.code === 404 && initialize && !opening) {
        try {
          reconnecting ??= reopenSession().finally(() => {
            reconnecting = undefined;
          });
          await reconnecting;
          await http.send(message);
          return;
        } catch (retryError) {
          return refuse(message, retryError);
        }
      }
      return refuse(message, error);
    }
  };

  const close = async (): Promise<void> => {
    if (closing) return closed;
    closing = true;
    stdin.off('end', onEnd);
    try {
      await http.terminateSession();
    } catch {
      // The server may be gone already; its idle sweep closes the session then.
    }
    await http.close().catch(() => undefined);
    await stdio.close().catch(() => undefined);
    // As the SDK's transport does with stdin: unread, so that nothing keeps the process alive.
    stdin.unpipe(lines);
    if (stdin.listenerCount('data') === 0) stdin.pause();
    resolveClosed();
    return closed;
  };
  const onEnd = (): void => {
    void close();
  };

  stdio.onmessage = (message) => {
    void forward(message);
  };
  stdio.onerror = (error) => log(`plainpay mcp: bad input on stdin: ${describe(error)}`);
  stdin.on('end', onEnd);
  await stdio.start();
  return { closed, close };
}

/** A request the server could not take gets a JSON-RPC error, so the client is not left waiting. */
function refusal(
  stdio: StdioServerTransport,
  url: URL,
  log: (line: string) => void,
): (message: JSONRPCMessage, error: unknown) => Promise<void> {
  return async (message, error) => {
    const detail =
      error instanceof StreamableHTTPError ? describe(error) : `could not reach ${url.href}: ${describe(error)}`;
    log(`plainpay mcp: ${detail}`);
    if (!isJSONRPCRequest(message)) return;
    await stdio.send({
      jsonrpc: '2.0',
      id: message.id,
      error: { code: UPSTREAM_ERROR, message: `plainpay: ${detail}` },
    });
  };
}

/**
 * The client's lines, less those the bridge cannot relay as written. The SDK reads each line into
 * values and the HTTP transport writes them out again, so a number goes on as its double:
 * `100.00000000000000001` would reach the server as 100, and be paid as 100, where the server
 * itself refuses it (docs/api.md, Amounts). Such a request is answered here with -32602 and not
 * sent: a number goes on only when its double writes the same value without an exponent (`1.50`
 * goes on as 1.5; `1e3` and `100.00000000000000001` do not go on at all).
 */
function relayableLines(stdout: Writable, log: (line: string) => void): Transform {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  const relayed = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const lines = (partial + decoder.write(chunk)).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const unrelayable = numberNotRelayable(line);
        if (unrelayable === undefined) this.push(`${line}\n`);
        else refuseUnrelayable(line, unrelayable, stdout, log);
      }
      done();
    },
    flush(done) {
      const rest = partial + decoder.end();
      if (rest !== '') this.push(rest);
      done();
    },
  });
  return relayed;
}

/** The first number in a line of JSON that its double would not carry as written, if any. */
function numberNotRelayable(line: string): string | undefined {
  if (!writesANumberAsNotItsDouble(line)) return undefined;
  let value: unknown;
  try {
    value = parseJson(line, { numbers: 'as written' });
  } catch {
    return undefined; // not JSON: the SDK reports it as it always did
  }
  const stack: unknown[] = [value];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (next instanceof JsonNumber) {
      if (!next.exact || next.hasExponent) return next.text;
    } else if (typeof next === 'object' && next !== null) {
      stack.push(...Object.values(next));
    }
  }
  return undefined;
}

function refuseUnrelayable(line: string, text: string, stdout: Writable, log: (line: string) => void): void {
  const message = `plainpay: the number ${text} cannot be relayed as written (it would reach the server as ${String(Number(text))}); write plain digits, without an exponent, no more decimals than the value has`;
  log(`plainpay mcp: ${message}`);
  const parsed = JSON.parse(line) as unknown;
  for (const request of Array.isArray(parsed) ? parsed : [parsed]) {
    const id = (request as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' && typeof id !== 'number') continue;
    const answer = { jsonrpc: '2.0', id, error: { code: -32602, message: `Invalid params: ${message}` } };
    stdout.write(`${JSON.stringify(answer)}\n`);
  }
}

/** One line for a person: the API's error message when the server sent one. */
function describe(error: unknown): string {
  if (error instanceof StreamableHTTPError) {
    const body = /\{.*\}$/s.exec(error.message)?.[0];
    let detail = error.message;
    if (body) {
      try {
        const parsed = JSON.parse(body) as { error?: { message?: unknown } | undefined };
        if (typeof parsed.error?.message === 'string') detail = parsed.error.message;
      } catch {
        // not JSON: keep the transport's message
      }
    }
    return `the server answered HTTP ${error.code ?? '?'}: ${detail}`;
  }
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error instanceof Error ? error.message : String(error)}${cause}`;
}
