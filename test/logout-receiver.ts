/**
 * A client's back-channel logout endpoint for tests (OIDC Back-Channel Logout 1.0 §2.5): a real
 * HTTP server on the loopback interface that records every POST and answers as scripted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { sleep } from './helpers.js';

/** How the receiver answers one request: 200, 503, a 302 to `/elsewhere`, 400, or never. */
export type Answer = 'ok' | 'fail' | 'redirect' | 'reject' | 'hang';

/** One request the receiver got. */
export interface Received {
  path: string;
  /** The `logout_token` form field. */
  token: string;
  /** Its `sid` and `aud` claims (unverified; tests verify with jose separately). */
  sid: string;
  aud: string;
  answer: Answer;
}

/** A scripted back-channel logout receiver. */
export class LogoutReceiver {
  readonly received: Received[] = [];
  /** Answers for the next requests, in order; then `ok`. */
  readonly script: Answer[] = [];
  /** Resolves when a request with answer `hang` arrives. */
  private hung: Array<() => void> = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /**
   * Starts a receiver on a loopback port, a free one unless `port` is given (a receiver that was
   * down comes up where a client's logout URI points); `url` is its base (`http://127.0.0.1:PORT`).
   */
  static async start(port = 0): Promise<LogoutReceiver> {
    const server = createServer();
    await new Promise<void>((ok) => server.listen(port, '127.0.0.1', ok));
    const receiver = new LogoutReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (req, res) => receiver.handle(req, res));
    return receiver;
  }

  /** The requests answered 200 (logouts the client acknowledged). */
  get delivered(): Received[] {
    return this.received.filter((r) => r.answer === 'ok');
  }

  /** Waits until `count()` reaches `n`, polling every 100 ms, for at most `ms`; fails the test after. */
  async waitFor(count: () => number, n: number, ms = 20_000): Promise<void> {
    const end = Date.now() + ms;
    while (count() < n) {
      if (Date.now() > end)
        throw new Error(
          `receiver: ${count()} of ${n} after ${ms} ms: ${JSON.stringify(this.received.map((r) => r.answer))}`,
        );
      await sleep(100);
    }
  }

  /** Resolves once a request is held open by a `hang` answer. */
  nextHang(): Promise<void> {
    return new Promise((ok) => this.hung.push(ok));
  }

  /** Stops the server, dropping held connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((ok) => this.server.close(ok));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const answer = req.method === 'POST' ? (this.script.shift() ?? 'ok') : 'reject';
      const token = new URLSearchParams(body).get('logout_token') ?? '';
      let claims: Record<string, unknown> = {};
      try {
        claims = decodeJwt(token);
      } catch {
        // recorded with empty claims; the test's assertions catch it
      }
      this.received.push({
        path: req.url ?? '',
        token,
        sid: String(claims.sid ?? ''),
        aud: String(claims.aud ?? ''),
        answer,
      });
      if (answer === 'hang') {
        for (const ok of this.hung.splice(0)) ok();
        return;
      }
      if (answer === 'redirect') res.writeHead(302, { location: '/elsewhere' }).end();
      else res.writeHead({ ok: 200, fail: 503, reject: 400 }[answer]).end();
    });
  }
}
