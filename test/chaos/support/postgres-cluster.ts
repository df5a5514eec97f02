// A private Postgres cluster for a chaos test: its own data directory and port, so that stopping it
// disturbs nothing else on the machine (the shared Postgres on 5432 is never touched). Needs the
// Debian postgresql server binaries (/usr/lib/postgresql/<version>/bin); when they are missing,
// postgresBinDir() is undefined and the test skips. As root, the server runs as the postgres user
// (initdb refuses root); as anyone else, as that user.

import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

/** The newest installed server's bin directory, or undefined. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

export interface PostgresCluster {
  port: number;
  /** A connection URL for `database` (default postgres) as the superuser postgres. */
  url(database?: string): string;
  /** Starts the server and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops it the way an operator restarting it does (`pg_ctl stop -m fast`: sessions get 57P01). */
  stop(): Promise<void>;
  running(): boolean;
  /** Stops it if running and removes its directory. */
  destroy(): Promise<void>;
}

export async function createPostgresCluster(): Promise<PostgresCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no Postgres server binaries under /usr/lib/postgresql');
  const asRoot = process.getuid?.() === 0;
  // Asynchronous, so that the test's own load keeps flowing while the server starts or stops.
  const run = (command: string, args: string[]): Promise<void> => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
    return new Promise((resolve, reject) => {
      execFile(file, argv, { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
        else resolve();
      });
    });
  };

  const root = mkdtempSync(join(tmpdir(), 'plainpay-chaos-pg-'));
  const dataDir = join(root, 'data');
  const logFile = join(root, 'server.log');
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
  }
  await run(join(bin, 'initdb'), ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = await freePort();
  const pgCtl = join(bin, 'pg_ctl');
  // Sockets in the cluster's own directory; fsync off: the data is thrown away.
  const serverOptions = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  let isRunning = false;

  // A test process that dies leaves no server behind.
  const onExit = (): void => {
    if (!isRunning) return;
    spawnSync(
      asRoot ? 'runuser' : pgCtl,
      [...(asRoot ? ['-u', 'postgres', '--', pgCtl] : []), '-D', dataDir, 'stop', '-m', 'immediate'],
      {
        timeout: 10_000,
      },
    );
  };
  process.on('exit', onExit);

  const cluster: PostgresCluster = {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      await run(pgCtl, ['-D', dataDir, '-o', serverOptions, '-l', logFile, '-w', '-t', '60', 'start']);
      isRunning = true;
    },
    async stop() {
      await run(pgCtl, ['-D', dataDir, '-w', '-t', '60', 'stop', '-m', 'fast']);
      isRunning = false;
    },
    running: () => isRunning,
    async destroy() {
      if (isRunning) {
        try {
          await run(pgCtl, ['-D', dataDir, '-w', '-t', '30', 'stop', '-m', 'immediate']);
        } finally {
          isRunning = false;
        }
      }
      process.off('exit', onExit);
      rmSync(root, { recursive: true, force: true });
    },
  };
  return cluster;
}
