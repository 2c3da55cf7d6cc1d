/**
 * OpenID CIBA Core 1.0 end to end: the real `sigil start` process, openid-client v6 as the client
 * (`initiateBackchannelAuthentication`, `pollBackchannelAuthenticationGrant`) in poll and ping
 * modes, a real HTTP server on loopback that receives the ping, the mail through a real SMTP
 * server, and the person's approval and denial in Chromium at `/account/requests`. Every CIBA
 * error the token endpoint answers is seen where openid-client surfaces it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/index.js';
import { settled, testConfig } from '../helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';
import { type BrowserFixture, newPage, signInDirectly, startBrowserFixture, submitLogin } from './browser-fixture.js';

const GRANT = 'urn:openid:params:grant-type:ciba';
const POLL = { id: 'speaker', secret: 'speaker-secret', name: 'Smart Speaker' } as const;
const PING = { id: 'kiosk', secret: 'kiosk-secret', name: 'Bank Kiosk' } as const;

/** What the client's notification endpoint received. */
interface Ping {
  headers: IncomingHttpHeaders;
  body: string;
}

let smtp: SmtpReceiver;
let receiver: Server;
let notificationEndpoint = '';
const pings: Ping[] = [];
let f: BrowserFixture;

/** The fixture config, mail through the test's SMTP server, and a poll and a ping client. */
function cibaConfig(): ConfigInput {
  const base = testConfig();
  const ciba = {
    allowedGrantTypes: [GRANT],
    allowedScopes: ['openid', 'profile', 'email'],
    pollingInterval: 1,
  };
  return {
    ...base,
    email: { smtpUrl: smtp.url, from: 'id@acme.example' },
    clients: [
      ...(base.clients ?? []),
      { clientId: POLL.id, clientName: POLL.name, clientSecrets: [POLL.secret], ...ciba },
      {
        clientId: PING.id,
        clientName: PING.name,
        clientSecrets: [PING.secret],
        ...ciba,
        backchannelTokenDeliveryMode: 'ping',
        backchannelClientNotificationEndpoint: notificationEndpoint,
      },
    ],
  };
}

beforeAll(async () => {
  smtp = await new SmtpReceiver().start();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      pings.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  notificationEndpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/ciba-callback`;
  f = await startBrowserFixture(() => cibaConfig());
}, 60_000);
afterAll(async () => {
  await f?.close();
  await smtp?.close();
  receiver?.closeAllConnections();
  await new Promise((ok) => receiver?.close(ok));
});

/** openid-client's configuration of a client, from Sigil's discovery document. */
function clientOf(c: { id: string; secret: string }): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(f.sigil.url), c.id, c.secret, undefined, { execute: [oidc.allowInsecureRequests] });
}

/** The error openid-client threw for an OAuth error answer. */
async function oauthError(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(oidc.ResponseBodyError);
  return (err as oidc.ResponseBodyError).error;
}

/** One token request of the CIBA grant, as openid-client sends any grant (no retries). */
function pollOnce(rp: oidc.Configuration, authReqId: string) {
  return oidc.genericGrantRequest(rp, GRANT, { auth_req_id: authReqId });
}

/** The approval page's section of the request with `bindingMessage`, after the page is loaded. */
async function requestSection(page: Page, bindingMessage: string) {
  await page.goto(`${f.sigil.url}/account/requests`);
  const section = page.locator('section.request', { hasText: bindingMessage });
  await section.waitFor();
  return section;
}

describe('poll mode with openid-client and Chromium', () => {
  it('mails the user, who follows the link, signs in, sees the binding message and approves; the client polls to tokens', async () => {
    const rp = await clientOf(POLL);
    const mailsBefore = smtp.mails.length;
    const started = await oidc.initiateBackchannelAuthentication(rp, {
      scope: 'openid profile',
      login_hint: 'alice',
      binding_message: 'Lamp 7F2K',
    });
    expect(started.expires_in).toBe(300);
    expect(started.interval).toBe(1);

    // Nobody answered yet: the token endpoint says authorization_pending, then slow_down to a
    // client that asks again at once; openid-client surfaces both as ResponseBodyError.
    expect(await oauthError(pollOnce(rp, started.auth_req_id))).toBe('authorization_pending');
    expect(await oauthError(pollOnce(rp, started.auth_req_id))).toBe('slow_down');

    const mail = await smtp.waitFor(mailsBefore + 1);
    expect(mail.to).toEqual(['alice@example.com']);
    const link = /https?:\/\/\S+\/account\/requests/.exec(mail.text)?.[0];
    expect(link).toBe(`${f.sigil.url}/account/requests`);

    const { context, page } = await newPage(f.browser);
    try {
      await page.goto(link as string);
      await page.waitForURL(/\/account\/login/);
      await submitLogin(page, 'alice');
      await page.waitForURL(`${f.sigil.url}/account/requests`);
      const section = page.locator('section.request', { hasText: 'Lamp 7F2K' });
      await section.waitFor();
      expect(await section.locator('h2').textContent()).toBe(POLL.name);
      expect(await section.locator('strong').textContent()).toBe('Lamp 7F2K');
      // openid-client polls until the answer is there, at the interval the slow_down above grew
      // by 5 s (as openid-client itself grows it on a slow_down it meets while polling).
      const tokens = oidc.pollBackchannelAuthenticationGrant(rp, { ...started, interval: (started.interval ?? 5) + 5 });
      await section.locator('button[name=button][value=approve]').click();
      await page.getByText('Approved. You can go back to the application.').waitFor();
      const answer = await tokens;
      expect(answer.access_token).toEqual(expect.any(String));
      expect(answer.claims()?.sub).toBe('1');
      expect(answer.claims()?.aud).toBe(POLL.id);
      expect(answer.scope?.split(' ').sort()).toEqual(['openid', 'profile']);
      // Redeemed once: the request is gone for the next poll.
      expect(await oauthError(pollOnce(rp, started.auth_req_id))).toBe('invalid_grant');
    } finally {
      await context.close();
    }
  }, 60_000);

  it('the user denies in Chromium: openid-client ends with access_denied', async () => {
    const rp = await clientOf(POLL);
    const started = await oidc.initiateBackchannelAuthentication(rp, {
      scope: 'openid',
      login_hint: 'bob',
      binding_message: 'Deny <me> & go',
    });
    const { context, page } = await newPage(f.browser);
    try {
      await signInDirectly(page, f.sigil, 'bob');
      const section = await requestSection(page, 'Deny <me> & go');
      // Shown as text, not markup.
      expect(await section.locator('strong').innerHTML()).toBe('Deny &lt;me&gt; &amp; go');
      await section.locator('button[name=button][value=deny]').click();
      await page.getByText('Denied. The application gets no access.').waitFor();
      expect(await oauthError(oidc.pollBackchannelAuthenticationGrant(rp, started))).toBe('access_denied');
    } finally {
      await context.close();
    }
  }, 30_000);

  it('nobody answers before requested_expiry: openid-client ends with expired_token', async () => {
    const rp = await clientOf(POLL);
    const started = await oidc.initiateBackchannelAuthentication(rp, {
      scope: 'openid',
      login_hint: 'alice',
      requested_expiry: '2',
    });
    expect(started.expires_in).toBe(2);
    // openid-client stops by itself after expires_in; a longer signal lets it see the server's answer.
    const error = await oauthError(
      oidc.pollBackchannelAuthenticationGrant(rp, started, undefined, { signal: AbortSignal.timeout(20_000) }),
    );
    expect(error).toBe('expired_token');
  }, 30_000);
});

describe('ping mode with openid-client and Chromium', () => {
  it('the user approves; the notification endpoint gets the auth_req_id with the bearer token; the client redeems', async () => {
    const rp = await clientOf(PING);
    const token = oidc.randomState();
    const started = await oidc.initiateBackchannelAuthentication(rp, {
      scope: 'openid email',
      login_hint: 'alice',
      binding_message: 'Kiosk 12',
      client_notification_token: token,
    });
    const before = pings.length;
    const { context, page } = await newPage(f.browser);
    try {
      await signInDirectly(page, f.sigil, 'alice');
      const section = await requestSection(page, 'Kiosk 12');
      expect(await section.locator('h2').textContent()).toBe(PING.name);
      await section.locator('button[name=button][value=approve]').click();
      await page.getByText('Approved. You can go back to the application.').waitFor();
    } finally {
      await context.close();
    }
    const count = await settled(
      async () => pings.length,
      (n) => n > before,
    );
    expect(count).toBe(before + 1);
    const ping = pings[before] as Ping;
    expect(ping.headers.authorization).toBe(`Bearer ${token}`);
    expect(ping.headers['content-type']).toBe('application/json');
    expect(JSON.parse(ping.body)).toEqual({ auth_req_id: started.auth_req_id });
    // Pinged: one token request redeems it.
    const answer = await oidc.pollBackchannelAuthenticationGrant(rp, started);
    expect(answer.claims()?.sub).toBe('1');
    expect(answer.scope?.split(' ').sort()).toEqual(['email', 'openid']);
  }, 30_000);

  it('the user denies: no tokens, access_denied', async () => {
    const rp = await clientOf(PING);
    const started = await oidc.initiateBackchannelAuthentication(rp, {
      scope: 'openid',
      login_hint: 'alice',
      binding_message: 'Kiosk 13',
      client_notification_token: oidc.randomState(),
    });
    const before = pings.length;
    const { context, page } = await newPage(f.browser);
    try {
      await signInDirectly(page, f.sigil, 'alice');
      const section = await requestSection(page, 'Kiosk 13');
      await section.locator('button[name=button][value=deny]').click();
      await page.getByText('Denied. The application gets no access.').waitFor();
    } finally {
      await context.close();
    }
    await settled(
      async () => pings.length,
      (n) => n > before,
    );
    expect(JSON.parse((pings[before] as Ping).body)).toEqual({ auth_req_id: started.auth_req_id });
    expect(await oauthError(oidc.pollBackchannelAuthenticationGrant(rp, started))).toBe('access_denied');
  }, 30_000);

  it('an unknown user is unknown_user_id at the request, surfaced by initiateBackchannelAuthentication', async () => {
    const rp = await clientOf(PING);
    const error = await oauthError(
      oidc.initiateBackchannelAuthentication(rp, {
        scope: 'openid',
        login_hint: 'nobody',
        client_notification_token: 'x',
      }),
    );
    expect(error).toBe('unknown_user_id');
  });
});
