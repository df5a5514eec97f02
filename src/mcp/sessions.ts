/**
 * The open MCP sessions of one API instance, bounded in number (overall and per key) and in idle
 * time. A session is bound to the API key that opened it; another key cannot use its id.
 *
 * Sessions are in-process state: a client whose session is gone (idle, evicted, another
 * instance, a restart) gets 404 and starts a new one, as the MCP transport spec prescribes.
 * Nothing a session holds matters to money: every tool call commits through the pipeline.
 */

export interface McpSessionLimits {
  /** Open sessions per instance; a new one beyond this is refused (503) after idle ones are swept. */
  maxSessions: number;
  /** Open sessions per API key; a new one beyond this closes that key's least recently used one. */
  maxSessionsPerKey: number;
  /** A session with no request in flight for this long is closed. */
  idleMs: number;
}

export const DEFAULT_MCP_SESSION_LIMITS: McpSessionLimits = Object.freeze({
  maxSessions: 1000,
  maxSessionsPerKey: 16,
  idleMs: 30 * 60_000,
});

export interface McpSessionHandle {
  readonly id: string;
  readonly keyId: string;
  /** Closes the transport and the server; must end in remove(id). */
  close(): Promise<void>;
}

interface Entry<S extends McpSessionHandle> {
  session: S;
  lastSeen: number;
  /** Requests in flight (an open GET stream counts): a session that is busy is not idle. */
  active: number;
}

export class McpSessions<S extends McpSessionHandle = McpSessionHandle> {
  readonly #entries = new Map<string, Entry<S>>();
  readonly #limits: McpSessionLimits;
  readonly #now: () => number;

  constructor(limits: McpSessionLimits, now: () => number) {
    this.#limits = limits;
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The session with this id if this key opened it; else undefined (the caller answers 404). */
  get(id: string, keyId: string): S | undefined {
    const entry = this.#entries.get(id);
    if (!entry || entry.session.keyId !== keyId) return undefined;
    if (entry.active === 0 && this.#now() - entry.lastSeen > this.#limits.idleMs) {
      void this.#close(entry);
      return undefined;
    }
    entry.lastSeen = this.#now();
    return entry.session;
  }

  /**
   * Makes room for a new session of this key: sweeps idle sessions, closes the key's least
   * recently used session when the key is at its limit, and says whether there is room.
   */
  async admit(keyId: string): Promise<boolean> {
    await this.sweep();
    const own = [...this.#entries.values()].filter((entry) => entry.session.keyId === keyId);
    if (own.length >= this.#limits.maxSessionsPerKey) {
      // Idle ones first, then by last use: a key that opens sessions in a loop only evicts its own.
      own.sort((a, b) => Number(a.active > 0) - Number(b.active > 0) || a.lastSeen - b.lastSeen);
      for (const entry of own.slice(0, own.length - this.#limits.maxSessionsPerKey + 1)) await this.#close(entry);
    }
    return this.#entries.size < this.#limits.maxSessions;
  }

  add(session: S): void {
    this.#entries.set(session.id, { session, lastSeen: this.#now(), active: 0 });
  }

  remove(id: string): void {
    this.#entries.delete(id);
  }

  /** Marks a request in flight; the returned function marks it done (call it once). */
  track(id: string): () => void {
    const entry = this.#entries.get(id);
    if (!entry) return () => {};
    entry.active++;
    entry.lastSeen = this.#now();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      entry.active--;
      entry.lastSeen = this.#now();
    };
  }

  /** Closes every session idle for longer than the limit. */
  async sweep(): Promise<number> {
    const cutoff = this.#now() - this.#limits.idleMs;
    const idle = [...this.#entries.values()].filter((entry) => entry.active === 0 && entry.lastSeen < cutoff);
    for (const entry of idle) await this.#close(entry);
    return idle.length;
  }

  async closeAll(): Promise<void> {
    for (const entry of [...this.#entries.values()]) await this.#close(entry);
  }

  async #close(entry: Entry<S>): Promise<void> {
    this.#entries.delete(entry.session.id);
    await entry.session.close().catch(() => undefined);
  }
}
