/**
 * An https server on 127.0.0.1 that serves what a test puts at a path (Client ID Metadata
 * Documents, JWKS, or misbehaving answers), with a certificate of its own made by openssl for
 * 127.0.0.1. A Sigil process trusts it through `NODE_EXTRA_CA_CERTS=<certFile>`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '../helpers.js';

/** What answers a path. */
export type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** Answers with `body` as JSON and the given headers. */
export function json(body: unknown, headers: Record<string, string> = {}): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

export class DocumentServer {
  readonly routes = new Map<string, Route>();
  /** Requests per path. */
  readonly hits = new Map<string, number>();
  /** TCP connections accepted. */
  connections = 0;
  /** The certificate (PEM) to trust. */
  certFile = '';
  origin = '';
  private server!: Server;
  private cleanup = () => {};

  async start(): Promise<this> {
    const { dir, cleanup } = tempDir();
    this.cleanup = cleanup;
    const key = join(dir, 'key.pem');
    this.certFile = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        key,
        '-out',
        this.certFile,
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
      ],
      { stdio: 'ignore' },
    );
    this.server = createServer({ key: readFileSync(key), cert: readFileSync(this.certFile) }, (req, res) => {
      // The request target as sent (a URL parser would read '//host…' as a host: the property test sends such paths).
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const route = this.routes.get(path);
      if (route) route(req, res);
      else {
        res.writeHead(404);
        res.end();
      }
    });
    this.server.on('connection', () => (this.connections += 1));
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.origin = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Requests that reached `path`. */
  count(path: string): number {
    return this.hits.get(path) ?? 0;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((ok) =>
      this.server.close(() => {
        this.cleanup();
        ok();
      }),
    );
  }
}
