/**
 * A webhook receiver for the tests: a real HTTP server on a loopback port that verifies every
 * delivery with the `standardwebhooks` package (as a receiver would), records it, and answers as
 * the test says (a status per delivery, a hang, a huge body, or a JSON answer, optionally signed,
 * as a synchronous hook's receiver gives).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One delivery the receiver got. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The body parsed, when the signature verified with one of the receiver's secrets; else undefined. */
  verified: { type: string; timestamp: string; data: Record<string, unknown> } | undefined;
  path: string;
}

/**
 * A JSON answer (a synchronous hook's): `status` (default 200), the body, and a Standard Webhooks
 * signature with `signWith` (a secret) for message `signId` (default: the request's `webhook-id`).
 */
export interface JsonReply {
  status?: number;
  json: unknown;
  signWith?: string;
  signId?: string;
}

/**
 * How the receiver answers one delivery: a status (default 204), `hang` (never answers), `huge`
 * (200 and 50 MB, streamed without a length), or a JSON answer.
 */
export type Reply = number | 'hang' | 'huge' | JsonReply;

/** A running receiver. */
export interface Receiver {
  url: string;
  received: Received[];
  /** The verified bodies, in the order received. */
  verified(): NonNullable<Received['verified']>[];
  /** The answers to give next, in order; afterwards `otherwise`. */
  replies: Reply[];
  otherwise: Reply;
  /** The secrets a signature may verify with (set or replaced by the test). */
  secrets: string[];
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 verifying with `secrets`. */
export async function startReceiver(secrets: string[] = []): Promise<Receiver> {
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: '',
    received: [],
    verified: () => receiver.received.flatMap((r) => (r.verified ? [r.verified] : [])),
    replies: [],
    otherwise: 204,
    secrets,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      let verified: Received['verified'];
      for (const secret of receiver.secrets)
        try {
          verified = new Webhook(secret).verify(body, headers) as Received['verified'];
          break;
        } catch {
          // Another secret, or none: recorded unverified.
        }
      receiver.received.push({
        id: headers['webhook-id'],
        timestamp: headers['webhook-timestamp'],
        signature: headers['webhook-signature'],
        body,
        verified,
        path: req.url ?? '',
      });
      const reply = receiver.replies.shift() ?? receiver.otherwise;
      if (reply === 'hang') {
        hanging.add(res);
        return;
      }
      if (reply === 'huge') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const block = Buffer.alloc(1024 * 1024, 120);
        let left = 50;
        const more = () => {
          while (left > 0) {
            left--;
            if (!res.write(block)) return void res.once('drain', more);
          }
          res.end();
        };
        res.on('error', () => {});
        more();
        return;
      }
      if (typeof reply === 'object') {
        const text = JSON.stringify(reply.json);
        const signature: Record<string, string> = {};
        if (reply.signWith) {
          const id = reply.signId ?? headers['webhook-id'];
          const at = new Date();
          signature['webhook-id'] = id;
          signature['webhook-timestamp'] = String(Math.floor(at.getTime() / 1000));
          signature['webhook-signature'] = new Webhook(reply.signWith).sign(id, at, text);
        }
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...signature }).end(text);
        return;
      }
      res.writeHead(reply).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}
