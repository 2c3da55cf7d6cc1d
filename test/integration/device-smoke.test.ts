import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { InjectBrowser } from '../browser-helpers.js';
import { form, startSigil } from '../helpers.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

describe('device flow through the pages', () => {
  let sigil: Awaited<ReturnType<typeof startSigil>>;
  beforeAll(async () => {
    sigil = await startSigil({
      clients: [
        {
          clientId: 'tv',
          requireClientSecret: false,
          allowedGrantTypes: [GRANT],
          allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
          allowOfflineAccess: true,
          pollingInterval: 1,
        },
      ],
    });
  });
  afterAll(async () => sigil.close());
  // Sigil's clock (Date only; timers run) stands still and is moved on instead of slept through:
  // two polls meant to come "at once" (slow_down) could be more than the 1 s interval apart on a
  // slow machine and get authorization_pending.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const poll = (deviceCode: string) =>
    sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: GRANT, client_id: 'tv', device_code: deviceCode }),
    });

  it('approves a device through login and consent, then the device gets tokens once', async () => {
    const start = await sigil.app.inject({
      method: 'POST',
      url: '/connect/deviceauthorization',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ client_id: 'tv', scope: 'openid profile offline_access' }),
    });
    expect(start.statusCode).toBe(200);
    const d = start.json();
    expect(d.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(d.verification_uri).toBe('http://127.0.0.1:5999/device');
    expect((await poll(d.device_code)).json().error).toBe('authorization_pending');
    expect((await poll(d.device_code)).json().error).toBe('slow_down');

    const b = new InjectBrowser(sigil.app);
    const page = await b.get(`/device?userCode=${d.user_code}`);
    expect(page.body).toContain(`value="${d.user_code}"`);
    const entered = await b.post('/device', {
      csrf_token: InjectBrowser.input(page.body, 'csrf_token'),
      userCode: d.user_code.toLowerCase().replace('-', ''),
      button: 'submit',
    });
    expect(entered.location).toMatch(/^\/account\/login\?interaction=/);
    const consent = await b.login(entered.location!, 'alice', 'alice');
    expect(consent.body).toContain('name="button" value="yes"');
    const done = await b.follow(
      await b.post('/consent', {
        csrf_token: InjectBrowser.input(consent.body, 'csrf_token'),
        interaction: InjectBrowser.input(consent.body, 'interaction'),
        button: 'yes',
      }),
    );
    expect(done.status).toBe(200);
    // Past the interval, 1 + 5 s after the slow_down.
    vi.setSystemTime(Date.now() + 6200);
    const [a, b2] = await Promise.all([poll(d.device_code), poll(d.device_code)]);
    const ok = [a, b2].filter((r) => r.statusCode === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.json()).toHaveProperty('id_token');
    expect(ok[0]!.json()).toHaveProperty('refresh_token');
  });
});
