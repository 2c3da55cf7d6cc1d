/**
 * A small, bounded pool of LDAP connections (ldapts clients) to one server: at most `max` open
 * connections, a bounded queue of callers waiting for one, and timeouts on connecting, on every
 * operation and on the wait. A connection that fails below LDAP (refused, reset, timed out) is
 * dropped, never reused; one whose socket has closed meanwhile is replaced before use, so a
 * StartTLS connection can never silently reconnect in clear text (ldapts reconnects lazily).
 */
import { Client, ResultCodeError } from 'ldapts';

/** The pool's settings; times in milliseconds. */
export interface PoolOptions {
  url: string;
  startTls: boolean;
  /** Connect and operation timeout, and the longest wait for a free connection, ms. */
  timeoutMs: number;
  /** Open connections at most. */
  max: number;
}

/** One pooled connection and the identity it is bound as (null: anonymous or unknown). */
export interface Connection {
  readonly client: Client;
  boundAs: string | null;
}

/** Callers waiting for a connection at most, per pool; beyond that the directory counts as overloaded. */
const MAX_WAITING = 200;

/** Thrown when no connection could be had in time, or the server failed below LDAP. */
export class PoolError extends Error {}

export class LdapPool {
  private readonly idle: Connection[] = [];
  private readonly waiting: Array<(c: Connection | undefined) => void> = [];
  private open = 0;
  private closed = false;

  constructor(private readonly options: PoolOptions) {}

  /**
   * Runs `fn` on a connection. An LDAP result error (`ResultCodeError`, e.g. invalid credentials)
   * leaves the connection usable (its identity reset: a failed bind leaves it anonymous, RFC 4513
   * §5.1.1 / RFC 4511 §4.2.1); any other error drops it and is rethrown as `PoolError`.
   * @throws PoolError when no connection is free within the timeout, or the connection failed.
   */
  async use<T>(fn: (conn: Connection) => Promise<T>): Promise<T> {
    const conn = await this.acquire();
    try {
      const result = await fn(conn);
      this.release(conn);
      return result;
    } catch (err) {
      if (err instanceof ResultCodeError) {
        conn.boundAs = null;
        this.release(conn);
        throw err;
      }
      this.discard(conn);
      throw err instanceof PoolError ? err : new PoolError(err instanceof Error ? err.message : String(err));
    }
  }

  /** Closes every idle connection and refuses further use; waiting callers get a `PoolError`. */
  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake(undefined);
    await Promise.all(this.idle.splice(0).map((c) => this.end(c)));
  }

  private async acquire(): Promise<Connection> {
    if (this.closed) throw new PoolError('the pool is closed');
    while (this.idle.length > 0) {
      const conn = this.idle.pop()!;
      if (conn.client.isConnected) return conn;
      this.discard(conn);
    }
    if (this.open < this.options.max) return this.connect();
    if (this.waiting.length >= MAX_WAITING) throw new PoolError('too many requests are waiting for a connection');
    const conn = await new Promise<Connection | undefined>((resolve) => {
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(wake);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(undefined);
      }, this.options.timeoutMs);
      const wake = (c: Connection | undefined) => {
        clearTimeout(timer);
        resolve(c);
      };
      this.waiting.push(wake);
    });
    if (!conn) throw new PoolError('no free connection to the directory in time');
    // Handed over from a release: open already counts it; a closed socket is replaced.
    if (conn.client.isConnected) return conn;
    this.discard(conn);
    return this.acquire();
  }

  private async connect(): Promise<Connection> {
    this.open++;
    const client = new Client({
      url: this.options.url,
      timeout: this.options.timeoutMs,
      connectTimeout: this.options.timeoutMs,
    });
    try {
      // StartTLS first: ldapts connects lazily, and the upgrade must precede every bind (RFC 4513 §3.1.1).
      if (this.options.startTls) await client.startTLS({});
      return { client, boundAs: null };
    } catch (err) {
      this.open--;
      this.wakeOne();
      await client.unbind().catch(() => {});
      throw new PoolError(err instanceof Error ? err.message : String(err));
    }
  }

  private release(conn: Connection): void {
    if (this.closed) {
      this.open--;
      void this.end(conn);
      return;
    }
    const wake = this.waiting.shift();
    if (wake) wake(conn);
    else this.idle.push(conn);
  }

  private discard(conn: Connection): void {
    this.open--;
    void this.end(conn);
    this.wakeOne();
  }

  /** A slot freed: the first waiting caller opens a connection of its own. */
  private wakeOne(): void {
    if (this.waiting.length === 0 || this.open >= this.options.max) return;
    const wake = this.waiting.shift()!;
    this.connect().then(wake, () => wake(undefined));
  }

  private async end(conn: Connection): Promise<void> {
    await conn.client.unbind().catch(() => {});
  }
}
