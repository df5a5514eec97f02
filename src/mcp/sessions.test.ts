import { describe, expect, it } from 'vitest';
import { type McpSessionHandle, McpSessions } from './sessions.ts';

function fakeSession(id: string, keyId: string, closed: string[]): McpSessionHandle {
  return {
    id,
    keyId,
    async close() {
      closed.push(id);
    },
  };
}

describe('McpSessions', () => {
  const limits = { maxSessions: 3, maxSessionsPerKey: 2, idleMs: 1000 };

  it('refuses a new session when the instance is full of live sessions', async () => {
    let now = 0;
    const closed: string[] = [];
    const sessions = new McpSessions(limits, () => now);
    for (const [id, key] of [
      ['a', 'k1'],
      ['b', 'k2'],
      ['c', 'k3'],
    ] as const) {
      expect(await sessions.admit(key)).toBe(true);
      sessions.add(fakeSession(id, key, closed));
    }
    expect(await sessions.admit('k4')).toBe(false);
    // Once they sit idle past the limit, they are swept and there is room again.
    now = 1001;
    expect(await sessions.admit('k4')).toBe(true);
    expect(closed.sort()).toEqual(['a', 'b', 'c']);
    expect(sessions.size).toBe(0);
  });

  it('a key at its limit evicts its own least recently used session, idle ones first', async () => {
    let now = 0;
    const closed: string[] = [];
    const sessions = new McpSessions(limits, () => now);
    sessions.add(fakeSession('old', 'k1', closed));
    now = 10;
    sessions.add(fakeSession('busy', 'k1', closed));
    now = 20;
    sessions.get('old', 'k1'); // used most recently, but idle
    const done = sessions.track('busy'); // a request in flight
    expect(await sessions.admit('k1')).toBe(true);
    expect(closed).toEqual(['old']);
    expect(sessions.get('busy', 'k1')?.id).toBe('busy');
    done();
  });

  it('a session is only found with the key that opened it, and not once idle', () => {
    let now = 0;
    const sessions = new McpSessions(limits, () => now);
    sessions.add(fakeSession('s', 'k1', []));
    expect(sessions.get('s', 'k2')).toBeUndefined();
    expect(sessions.get('s', 'k1')?.id).toBe('s');
    now = 500;
    expect(sessions.get('s', 'k1')?.id).toBe('s');
    now = 1501;
    expect(sessions.get('s', 'k1')).toBeUndefined();
    expect(sessions.size).toBe(0);
  });

  it('an open stream keeps a session from being idle', async () => {
    let now = 0;
    const closed: string[] = [];
    const sessions = new McpSessions(limits, () => now);
    sessions.add(fakeSession('s', 'k1', closed));
    const done = sessions.track('s');
    now = 10_000;
    expect(await sessions.sweep()).toBe(0);
    done();
    now = 11_001;
    expect(await sessions.sweep()).toBe(1);
    expect(closed).toEqual(['s']);
  });
});
