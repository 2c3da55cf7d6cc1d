/**
 * Failure counters and request quotas shared by the workers of `sigil start --workers N` without
 * Redis: each worker forwards `read`, `increment`, `claim` and `reset` to the
 * cluster primary over the IPC channel node:cluster opens, and the primary answers from one
 * `MemoryFailureCounters`, so the limits of config `rateLimits` and `pendingLimits` (and the LDAP
 * directories' `maxFailedBinds`) hold for all workers together. Each call is one message and one
 * answer, matched by a request id; the primary handles messages one at a time, so every call is
 * atomic as in Redis.
 */
import { countersUnavailable, type FailureCounterStore, type FailureWindow } from './failure-limiter.js';

/** A worker's question to the primary. `now` is the worker's Unix milliseconds. */
export type CounterRequest =
  | { sigil: 'counters'; id: number; op: 'read'; keys: string[]; now: number }
  | { sigil: 'counters'; id: number; op: 'increment'; keys: string[]; windowMs: number; now: number }
  /** `claim`: `keys[0]` is charged up to `max`, the others slide along. */
  | { sigil: 'counters'; id: number; op: 'claim'; keys: string[]; max: number; windowMs: number; now: number }
  | { sigil: 'counters'; id: number; op: 'reset'; keys: string[]; now: number };

/**
 * The primary's answer to the request `id`: the live windows of a `read`, the full window of a
 * refused `claim` (none for the others).
 */
export interface CounterReply {
  sigil: 'counters';
  id: number;
  windows: [string, FailureWindow][];
}

/** The worker's end of the IPC channel to the primary: `process` in a cluster worker. */
export interface PrimaryChannel {
  send?(
    message: CounterRequest,
    sendHandle: undefined,
    options: undefined,
    callback: (error: Error | null) => void,
  ): boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/** How long a worker waits for the primary's answer before the call fails, milliseconds. */
export const PRIMARY_ANSWER_TIMEOUT_MS = 5000;

/**
 * The counters of a cluster worker, kept by the primary (`answerCounterRequest`). A call fails
 * when the channel is closed or the primary does not answer within `timeoutMs`: its promise
 * rejects with OAuthError 503 `temporarily_unavailable` (`Retry-After: 1`, the reason in the
 * message, not in the description), so no credential is checked without its limits.
 */
export class PrimaryFailureCounters implements FailureCounterStore {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (reply: CounterReply) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }
  >();
  private readonly onMessage = (message: unknown) => {
    if (!isReply(message)) return;
    const call = this.pending.get(message.id);
    if (!call) return;
    this.pending.delete(message.id);
    clearTimeout(call.timer);
    call.resolve(message);
  };

  /**
   * @param channel the IPC channel to the primary (default: this process's)
   * @param timeoutMs how long a call waits for the primary's answer
   * @throws Error when the channel cannot send (this process has no parent over IPC).
   */
  constructor(
    private readonly channel: PrimaryChannel = process as PrimaryChannel,
    private readonly timeoutMs = PRIMARY_ANSWER_TIMEOUT_MS,
  ) {
    if (!channel.send) throw new Error('failure counters: this process has no IPC channel to a primary');
    channel.on('message', this.onMessage);
  }

  async read(keys: readonly string[], now: number): Promise<Map<string, FailureWindow>> {
    return new Map((await this.call({ op: 'read', keys: [...keys], now })).windows);
  }

  async increment(keys: readonly string[], windowMs: number, now: number): Promise<void> {
    await this.call({ op: 'increment', keys: [...keys], windowMs, now });
  }

  async claim(
    key: string,
    max: number,
    alongside: readonly string[],
    windowMs: number,
    now: number,
  ): Promise<FailureWindow | undefined> {
    return (await this.call({ op: 'claim', keys: [key, ...alongside], max, windowMs, now })).windows[0]?.[1];
  }

  async reset(keys: readonly string[]): Promise<void> {
    await this.call({ op: 'reset', keys: [...keys], now: Date.now() });
  }

  /** Stops listening; calls still waiting fail. */
  async close(): Promise<void> {
    this.channel.off('message', this.onMessage);
    for (const [id, call] of this.pending) {
      this.pending.delete(id);
      clearTimeout(call.timer);
      call.reject(countersUnavailable('failure counters: closed'));
    }
  }

  private call(request: DistributiveOmit<CounterRequest, 'sigil' | 'id'>): Promise<CounterReply> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        if (!this.pending.delete(id)) return;
        clearTimeout(timer);
        reject(err);
      };
      const timer = setTimeout(
        () =>
          fail(countersUnavailable(`failure counters: the primary process did not answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      this.channel.send?.({ sigil: 'counters', id, ...request } as CounterRequest, undefined, undefined, (err) => {
        if (err) fail(countersUnavailable(`failure counters: cannot reach the primary process (${err.message})`));
      });
    });
  }
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

/** True for a worker's `CounterRequest` (any other message a worker sends is not one). */
export function isCounterRequest(message: unknown): message is CounterRequest {
  const m = message as Partial<CounterRequest> | null;
  return m?.sigil === 'counters' && typeof m.id === 'number' && Array.isArray(m.keys) && typeof m.now === 'number';
}

function isReply(message: unknown): message is CounterReply {
  const m = message as Partial<CounterReply> | null;
  return m?.sigil === 'counters' && typeof m.id === 'number' && Array.isArray(m.windows);
}

/**
 * The primary's side: performs a worker's request on `counters` (the primary's one store) and
 * returns the answer to send back to that worker.
 */
export async function answerCounterRequest(
  counters: FailureCounterStore,
  request: CounterRequest,
): Promise<CounterReply> {
  if (request.op === 'increment') {
    await counters.increment(request.keys, request.windowMs, request.now);
    return { sigil: 'counters', id: request.id, windows: [] };
  }
  if (request.op === 'claim') {
    const [key = '', ...alongside] = request.keys;
    const full = await counters.claim(key, request.max, alongside, request.windowMs, request.now);
    return { sigil: 'counters', id: request.id, windows: full ? [[key, full]] : [] };
  }
  if (request.op === 'reset') {
    await counters.reset(request.keys);
    return { sigil: 'counters', id: request.id, windows: [] };
  }
  return { sigil: 'counters', id: request.id, windows: [...(await counters.read(request.keys, request.now))] };
}
