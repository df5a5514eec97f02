import { type PGlite, parse, protocol } from '@electric-sql/pglite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { forgetPreparedNames, isLostPreparedStatement, preparedName, unmarked } from './prepared-statements.ts';

/**
 * A Kysely dialect over one PGlite instance. PGlite is a single connection, so the driver
 * hands it out to one holder at a time (a FIFO mutex): a transaction keeps it from
 * BEGIN to COMMIT, exactly as a pooled pg connection would be kept.
 * No maintained dialect fits PGlite 0.5 (STACK.md), hence this small one.
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}

  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteDriver(this.pglite);
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }
}

class PGliteDriver implements Driver {
  private readonly connection: PGliteConnection;
  private queue: Promise<void> = Promise.resolve();

  constructor(pglite: PGlite) {
    this.connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.queue;
    this.queue = previous.then(() => held);
    await previous;
    this.connection.release = release;
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await (connection as PGliteConnection).run(`begin${isolation}`);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PGliteConnection).run('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PGliteConnection).run('rollback');
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const c = connection as PGliteConnection;
    const release = c.release;
    c.release = undefined;
    release?.();
  }

  async destroy(): Promise<void> {
    // The owner of the PGlite instance closes it (see connect.ts), after the lock is dropped.
  }
}

const { serialize } = protocol;

/**
 * The statements prepared in each PGlite instance (its one session), by name, with their parameter
 * types: per instance rather than per dialect, since two Kysely over one instance share the session.
 */
const preparedOn = new WeakMap<PGlite, Map<string, number[]>>();

class PGliteConnection implements DatabaseConnection {
  release: (() => void) | undefined;
  private readonly prepared: Map<string, number[]>;

  constructor(private readonly pglite: PGlite) {
    this.prepared = preparedOn.get(pglite) ?? new Map();
    preparedOn.set(pglite, this.prepared);
  }

  async run(sql: string): Promise<void> {
    await this.pglite.query(sql);
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.send<R>(compiled);
    const affected = 'affectedRows' in result ? result.affectedRows : undefined;
    return {
      rows: result.rows as R[],
      ...(affected !== undefined && /^\s*(insert|update|delete|merge)/i.test(unmarked(compiled.sql))
        ? { numAffectedRows: BigInt(affected) }
        : {}),
    };
  }

  /**
   * Without parameters, the simple protocol, which (like pg) accepts several statements in one
   * string: migrations rely on that. With them, a marked statement prepared, any other as query().
   */
  private async send<R>(compiled: CompiledQuery): Promise<{ rows: R[]; affectedRows?: number }> {
    if (compiled.parameters.length === 0) {
      const results = await this.pglite.exec(compiled.sql, { rowMode: 'object' });
      return (results.at(-1) ?? { rows: [] }) as { rows: R[]; affectedRows?: number };
    }
    const name = preparedName(compiled.sql);
    if (name !== undefined) return this.executePrepared<R>(name, compiled.sql, compiled.parameters);
    return this.pglite.query<R>(compiled.sql, compiled.parameters as unknown[], { rowMode: 'object' });
  }

  /**
   * What PGlite's query() does (Parse, Describe, Bind, Describe, Execute, Sync, then the files to
   * disk outside a transaction), except that the statement is parsed once under `name` and each
   * call sends only Bind, Describe, Execute and Sync with the parameters written as query() writes
   * them. Held under PGlite's query lock, like query(), so no other protocol exchange (a LISTEN)
   * interleaves with its messages; PGlite's transaction lock, which query() also takes, guards only
   * its transaction() API, which nothing here uses (the driver's own mutex holds the session).
   */
  private async executePrepared<R>(
    name: string,
    text: string,
    parameters: readonly unknown[],
  ): Promise<{ rows: R[]; affectedRows?: number }> {
    if (this.pglite.closed) throw new Error('PGlite is closed');
    const run = () =>
      this.pglite.runExclusive(async () => {
        const send = (message: Uint8Array) => this.pglite.execProtocolStream(message, { syncToFs: false });
        const messages = [];
        try {
          let types = this.prepared.get(name);
          if (types === undefined) {
            await send(serialize.parse({ name, text }));
            const described = await send(serialize.describe({ type: 'S', name }));
            const parameterTypes = described.find((m) => m.name === 'parameterDescription') as
              | { dataTypeIDs: number[] }
              | undefined;
            types = parameterTypes?.dataTypeIDs ?? [];
            this.prepared.set(name, types);
          }
          const values = parameters.map((value, i) => {
            if (value === null || value === undefined) return null;
            const serializer = this.pglite.serializers[types[i]!];
            return serializer ? serializer(value) : String(value);
          });
          messages.push(...(await send(serialize.bind({ statement: name, values }))));
          messages.push(...(await send(serialize.describe({ type: 'P' }))));
          messages.push(...(await send(serialize.execute({}))));
        } finally {
          messages.push(...(await send(serialize.sync())));
        }
        if (!this.pglite.isInTransaction()) await this.pglite.syncToFs();
        const [result] = parse.parseResults(messages, this.pglite.parsers, { rowMode: 'object' });
        return (result ?? { rows: [] }) as { rows: R[]; affectedRows?: number };
      });
    try {
      return await run();
    } catch (error) {
      if (!isLostPreparedStatement(error)) throw error;
      this.prepared.clear();
      forgetPreparedNames();
      // Inside a transaction block the failure aborted it: the caller gets the error as it came.
      if (this.pglite.isInTransaction()) throw error;
      return this.pglite.query<R>(text, parameters as unknown[], { rowMode: 'object' });
    }
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered by PGlite; we refuse loudly.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite dialect does not support streaming queries');
  }
}
