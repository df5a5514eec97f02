import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, childEnv, freePort, startServer } from './support/server.ts';

const run = promisify(execFile);
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plainpay-cli-conventions-'));
  dirs.push(dir);
  return dir;
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function plainpay(args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string }): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], options);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout: string; stderr: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** The environment of a user in a fresh directory: the defaults apply (./.plainpay, embedded database). */
function defaultEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { DATABASE_URL: _db, REDIS_URL: _redis, PLAINPAY_DATA_DIR: _dir, ...rest } = process.env;
  return { ...rest, LOG_LEVEL: 'warn', ...extra };
}

interface ErrorObject {
  error: { type: string; code?: string; message: string; param?: string };
}

const HELP_REQUESTS: readonly (readonly string[])[] = [
  ['--help'],
  ['-h'],
  ['help'],
  ['serve', '--help'],
  ['migrate', '--help'],
  ['accounts', '--help'],
  ['accounts', 'create', '--help'],
  ['keys', '--help'],
  ['keys', 'list', '-h'],
  ['keys', 'create', '--help'],
  ['keys', 'revoke', '--help'],
  ['audit', '-h'],
  ['audit', 'verify', '--help'],
  ['listen', '--help'],
  ['mcp', '--help'],
];

describe('plainpay CLI conventions', () => {
  it('migrate --help in an empty directory prints its help, exits 0 and creates nothing', async () => {
    const cwd = tempDir();
    const result = await plainpay(['migrate', '--help'], { env: defaultEnv(), cwd });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain('Usage: plainpay migrate');
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('every command and command group answers --help / -h on stdout with exit 0, touching nothing', async () => {
    const cwd = tempDir();
    const results = await Promise.all(HELP_REQUESTS.map((args) => plainpay([...args], { env: defaultEnv(), cwd })));
    for (const [i, result] of results.entries()) {
      const args = HELP_REQUESTS[i]!;
      const words = args.filter((arg) => !arg.startsWith('-') && arg !== 'help');
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(result.stdout).toContain(
        words.length > 0 ? `Usage: plainpay ${words.join(' ')}` : 'Usage: plainpay <command>',
      );
    }
    expect(readdirSync(cwd)).toEqual([]);
  }, 90_000);

  it('--help loads no configuration: a bad variable does not stop it', async () => {
    const result = await plainpay(['keys', 'create', '--help'], { env: defaultEnv({ PORT: 'x' }), cwd: tempDir() });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('--scopes');
  });

  it('--version and -v print the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-v']) {
      expect(await plainpay([flag], { env: defaultEnv(), cwd: tempDir() })).toEqual({
        code: 0,
        stdout: `${version}\n`,
        stderr: '',
      });
    }
  });

  it('an unknown option exits 2 naming it, as the API error object under --json, before opening anything', async () => {
    const cwd = tempDir();
    const text = await plainpay(['keys', 'list', '--account', 'acct_x', '--bogus'], { env: defaultEnv(), cwd });
    expect(text.code).toBe(2);
    expect(text.stderr).toContain("'--bogus'");
    expect(text.stderr).toContain('Usage: plainpay keys list');

    const json = await plainpay(['keys', 'list', '--account', 'acct_x', '--bogus', '--json'], {
      env: defaultEnv(),
      cwd,
    });
    expect(json.code).toBe(2);
    expect(json.stdout).toBe('');
    const body = JSON.parse(json.stderr) as ErrorObject;
    expect(body).toEqual({
      error: { type: 'invalid_request_error', code: 'invalid_request', param: 'bogus', message: expect.any(String) },
    });
    expect(body.error.message).toContain('--bogus');

    const command = await plainpay(['keys', 'rotate', '--json'], { env: defaultEnv(), cwd });
    expect(command.code).toBe(2);
    expect((JSON.parse(command.stderr) as ErrorObject).error.message).toContain("'keys rotate'");
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('under --json a configuration error is the error object naming the variable, exit 78', async () => {
    const result = await plainpay(['migrate', '--json'], { env: defaultEnv({ PORT: 'x' }), cwd: tempDir() });
    expect(result.code).toBe(78);
    expect((JSON.parse(result.stderr) as ErrorObject).error).toMatchObject({
      type: 'invalid_request_error',
      param: 'PORT',
    });
  });

  it('under --json an unknown account is a not_found error object, exit 1', async () => {
    const result = await plainpay(['keys', 'list', '--account', 'acct_missing', '--json'], {
      env: childEnv(tempDir()),
    });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stderr)).toEqual({
      error: {
        type: 'invalid_request_error',
        code: 'not_found',
        param: 'account',
        message: "No account 'acct_missing'.",
      },
    });
  }, 90_000);

  it('a data dir held by a process that does not answer CLI commands is exit 69, an unavailable error', async () => {
    const dataDir = tempDir();
    // This test process is alive and is no serve: it stands for another CLI command holding the lock.
    writeFileSync(join(dataDir, 'pgdata.lock'), String(process.pid));
    const result = await plainpay(['keys', 'list', '--account', 'acct_x', '--json'], { env: childEnv(dataDir) });
    expect(result.code).toBe(69);
    const body = JSON.parse(result.stderr) as ErrorObject;
    expect(body.error).toMatchObject({ type: 'api_error', code: 'unavailable' });
    expect(body.error.message).toContain(`already open in process ${process.pid}`);
  });

  it('while serve runs on the embedded database, the CLI works through it: a revoked key is refused at once', async () => {
    const server = await startServer();
    try {
      const env = childEnv(server.dataDir);
      const ping = (key: string): Promise<Response> =>
        fetch(`${server.url}/v1/ping`, { headers: { authorization: `Bearer ${key}` } });
      const { account } = (await (await ping(server.demoKey)).json()) as { account: string };

      const created = await plainpay(['keys', 'create', '--account', account, '--name', 'leaked', '--json'], { env });
      expect(created).toMatchObject({ code: 0, stderr: '' });
      const leaked = JSON.parse(created.stdout) as { id: string; secret: string };
      expect((await ping(leaked.secret)).status).toBe(200);

      const revoked = await plainpay(['keys', 'revoke', '--account', account, '--id', leaked.id], { env });
      expect(revoked).toMatchObject({ code: 0, stderr: '' });
      expect(revoked.stdout).toContain(`Revoked ${leaked.id}`);
      expect((await ping(leaked.secret)).status).toBe(401);
      expect((await ping(server.demoKey)).status).toBe(200);

      const listed = await plainpay(['keys', 'list', '--account', account, '--json'], { env });
      // The list as GET /keys prints it.
      const keys = (JSON.parse(listed.stdout) as { data: { id: string; revoked: string | null }[] }).data;
      expect(keys.find((key) => key.id === leaked.id)?.revoked).toEqual(expect.any(String));
      expect(keys.filter((key) => key.revoked === null)).toHaveLength(1);

      const audit = await plainpay(['audit', 'verify'], { env });
      expect(audit).toMatchObject({ code: 0, stderr: '' });
      expect(audit.stdout).toContain('Action log intact');

      expect(await plainpay(['migrate'], { env })).toMatchObject({
        code: 0,
        stdout: 'The database is up to date.\n',
      });

      const newAccount = await plainpay(['accounts', 'create', '--name', 'Second shop', '--json'], { env });
      expect(newAccount.code).toBe(0);
      expect((await ping((JSON.parse(newAccount.stdout) as { api_key: string }).api_key)).status).toBe(200);

      // Errors made inside serve come back as this CLI's own would, --json included.
      const missing = await plainpay(['keys', 'revoke', '--account', account, '--id', 'key_missing', '--json'], {
        env,
      });
      expect(missing.code).toBe(1);
      expect((JSON.parse(missing.stderr) as ErrorObject).error).toMatchObject({ code: 'not_found', param: 'id' });

      // A second serve still refuses the data dir, naming the process that holds it.
      const second = await plainpay(['serve'], {
        env: childEnv(server.dataDir, { PORT: String(await freePort()), CHECKOUT_PORT: String(await freePort()) }),
      });
      expect(second.code).toBe(69);
      expect(second.stderr).toContain('already open in process');
    } finally {
      expect(await server.stop()).toBe(0);
    }
    expect(server.output()).not.toContain('"level":50');
  }, 120_000);

  it('the admin socket answers anything but a command line with exit 2, and runs no service commands', async () => {
    const server = await startServer();
    try {
      const socket = join(server.dataDir, 'pgdata.sock');
      expect(statSync(socket).mode & 0o777).toBe(0o600);
      const ask = (line: string): Promise<string[]> =>
        new Promise((resolve, reject) => {
          let answer = '';
          const connection = createConnection(socket, () => connection.write(line));
          connection.setEncoding('utf8');
          connection.on('data', (chunk) => {
            answer += chunk;
          });
          connection.on('error', reject);
          connection.on('close', () => resolve(answer.trim().split('\n')));
        });
      for (const line of [
        'not json\n',
        '{"argv":"keys list"}\n',
        `${JSON.stringify({ argv: ['keys'], extra: 1 })}\n`,
      ]) {
        expect((await ask(line)).at(-1)).toBe('{"exit":2}');
      }
      const serve = await ask(`${JSON.stringify({ argv: ['serve'] })}\n`);
      expect(serve.at(-1)).toBe('{"exit":2}');
      expect(serve.join('\n')).toContain('does not run inside the service');
      // And the service is still up.
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 120_000);

  it('a socket left by a killed serve does not block the next start; a graceful stop removes it', async () => {
    const dataDir = tempDir();
    const socket = join(dataDir, 'pgdata.sock');
    const killed = await startServer({ PLAINPAY_DATA_DIR: dataDir });
    await killed.stop(['SIGKILL']);
    expect(existsSync(socket)).toBe(true);

    const restarted = await startServer({ PLAINPAY_DATA_DIR: dataDir });
    try {
      const audit = await plainpay(['audit', 'verify', '--json'], { env: childEnv(dataDir) });
      expect(audit.code).toBe(0);
      expect(JSON.parse(audit.stdout)).toMatchObject({ ok: true });
    } finally {
      expect(await restarted.stop()).toBe(0);
    }
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(join(dataDir, 'pgdata.lock'))).toBe(false);
  }, 120_000);
});
