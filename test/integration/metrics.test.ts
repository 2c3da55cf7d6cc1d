/**
 * `/metrics` is served by the management listener only (config `metrics`): the public app
 * answers 404 for it, the management listener (here on a free loopback port) serves the
 * Prometheus text with the public app's requests counted; `metrics: false` starts no listener.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSigil, type TestSigil } from '../helpers.js';

describe('the management listener', () => {
  let sigil: TestSigil;
  let origin: string | null;
  beforeAll(async () => {
    sigil = await startSigil({ metrics: { host: '127.0.0.1', port: 0 } });
    origin = await sigil.listenMetrics();
  });
  afterAll(async () => sigil?.close());

  it('the public app answers 404 for /metrics; /healthz and /readyz stay on it', async () => {
    const res = await sigil.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain('sigil_http_request_duration_seconds');
    expect(res.body).not.toContain('nodejs_version_info');
    expect((await sigil.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await sigil.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('serves /metrics on its own loopback address, counting the public requests', async () => {
    expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await sigil.app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
    const res = await fetch(`${origin}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /sigil_http_request_duration_seconds_count\{[^}]*route="\/\.well-known\/openid-configuration"[^}]*\} 1/,
    );
    expect(text).toContain('nodejs_version_info');
    // Only metrics here: the provider's endpoints are not on the management listener.
    expect((await fetch(`${origin}/.well-known/openid-configuration`)).status).toBe(404);
  });
});

describe('metrics: false', () => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ metrics: false });
  });
  afterAll(async () => sigil?.close());

  it('starts no management listener, and the public app still has no /metrics', async () => {
    expect(await sigil.listenMetrics()).toBeNull();
    expect(sigil.metricsApp.server.listening).toBe(false);
    expect((await sigil.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
  });
});
