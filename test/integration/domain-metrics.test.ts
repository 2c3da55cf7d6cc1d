/**
 * Domain metrics on the management listener: after a token request, sign-ins, a
 * refused request and a pending authorization request, `/metrics` carries the provider's own
 * counters and gauges, with bounded labels only (never a subject, username or address).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeClients,
  authorizeUrl,
  Browser,
  codeParams,
  idTokensInSession,
  pkce,
  webLike,
} from '../authorize-helpers.js';
import { basic, clientTokens, form, startSigil, type TestSigil } from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';

/** The value of the sample `name{labels}` (labels as printed, in prom-client's order), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('domain metrics', () => {
  let sigil: TestSigil;
  let origin: string;
  let receiver: LogoutReceiver;
  beforeAll(async () => {
    receiver = await LogoutReceiver.start();
    sigil = await startSigil({
      clients: [
        ...authorizeClients(),
        {
          clientId: 'm2m',
          clientSecrets: ['m2m-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
        webLike('bc', { backChannelLogoutUri: `${receiver.url}/bc` }),
      ],
      backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
      metrics: { host: '127.0.0.1', port: 0 },
      rateLimits: { maxFailures: 2 },
      pendingLimits: { interactionsPerBrowser: 2 },
    });
    origin = (await sigil.listenMetrics()) as string;
  });
  afterAll(async () => {
    await sigil?.close();
    await receiver?.close();
  });

  const scrape = async () => {
    const res = await fetch(`${origin}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };

  it('counts tokens issued by grant type and client', async () => {
    await clientTokens(sigil, 'api1');
    await clientTokens(sigil, 'api1');
    const text = await scrape();
    expect(text).toContain('# TYPE sigil_tokens_issued_total counter');
    expect(sample(text, 'sigil_tokens_issued_total{grant_type="client_credentials",client_id="m2m"}')).toBe(2);
  });

  it('counts sign-ins by method and outcome, with no subject or username in any label', async () => {
    const b = new Browser(sigil, '10.9.0.1');
    expect((await b.submitLogin(await b.get('/account/login'), 'alice', 'wrong')).status).toBe(200);
    await b.signIn('alice');
    const text = await scrape();
    expect(sample(text, 'sigil_sign_ins_total{method="password",outcome="success"}')).toBe(1);
    expect(sample(text, 'sigil_sign_ins_total{method="password",outcome="failure"}')).toBe(1);
    expect(text).not.toMatch(/alice|subject|10\.9\.0\.1/);
  });

  it('counts the requests each limiter refused', async () => {
    const attempt = (secret: string) =>
      sigil.app.inject({
        method: 'POST',
        url: '/connect/token',
        remoteAddress: '10.9.1.1',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m', secret) },
        payload: form({ grant_type: 'client_credentials' }),
      });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await attempt('wrong')).statusCode);
    expect(statuses).toEqual([401, 401, 429, 429]);
    const b = new Browser(sigil, '10.9.1.2');
    const authorize = async () => (await b.get(authorizeUrl(codeParams(pkce().challenge)))).status;
    expect([await authorize(), await authorize(), await authorize()]).toEqual([303, 303, 429]);
    const text = await scrape();
    expect(sample(text, 'sigil_limiter_refusals_total{limiter="failed_attempts"}')).toBe(2);
    expect(sample(text, 'sigil_limiter_refusals_total{limiter="interaction_quota"}')).toBe(1);
  });

  it('shows the pending interactions (stored by a timed commit), the back-channel outbox and the signing key age', async () => {
    const b = new Browser(sigil, '10.9.2.1');
    const page = await b.follow(await b.get(authorizeUrl(codeParams(pkce().challenge))));
    expect(page.status, page.body).toBe(200);
    const text = await scrape();
    expect(sample(text, 'sigil_pending_interactions')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'sigil_store_commit_duration_seconds_count')).toBeGreaterThan(0);
    expect(sample(text, 'sigil_backchannel_outbox_depth')).toBe(0);
    expect(sample(text, 'sigil_backchannel_outbox_oldest_age_seconds')).toBe(0);
    const keyAge = sample(text, 'sigil_signing_key_age_seconds{alg="RS256"}');
    expect(keyAge).toBeGreaterThanOrEqual(0);
    expect(keyAge).toBeLessThan(600);
  });

  it('shows a back-channel logout delivery waiting in the outbox after its receiver failed', async () => {
    receiver.script.push('fail');
    const b = new Browser(sigil, '10.9.3.1');
    const { idTokens } = await idTokensInSession(sigil, b, ['bc']);
    await b.get(`/connect/endsession?${new URLSearchParams({ id_token_hint: idTokens[0]! })}`);
    await receiver.waitFor(() => receiver.received.length, 1);
    const text = await scrape();
    expect(sample(text, 'sigil_backchannel_outbox_depth')).toBe(1);
    expect(sample(text, 'sigil_backchannel_outbox_oldest_age_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'sigil_backchannel_outbox_oldest_age_seconds')).toBeLessThan(60);
  });
});
