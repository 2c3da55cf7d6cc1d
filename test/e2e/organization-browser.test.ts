/**
 * The organization picker in a real Chromium: a client that requires an organization
 * (`organizationUsage: require`), a user of two organizations; after sign-in the picker lists both
 * (the accessibility basics and axe-core pass on it), the user picks one with the keyboard and the
 * browser lands at the client with a code whose tokens carry that organization. And an invitation
 * that travels over real SMTP (a receiver on loopback): the signed-out invitee opens the mailed
 * link, signs in from its page, comes back to it and accepts. Sigil runs in this process
 * (`startSigil`, listening on a free port), so that the memberships can be made first.
 */
import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configOrganizationId } from '../../src/organizations/organization.js';
import { basic, clientTokens, startSigil, type TestSigil } from '../helpers.js';
import { SmtpReceiver } from '../smtp-receiver.js';
import { pkce } from '../authorize-helpers.js';
import { audit, focused } from './accessibility.js';
import {
  browserConfig,
  CallbackServer,
  callbackResponse,
  launchChromium,
  newPage,
  submitLogin,
} from './browser-fixture.js';
import { freePort } from './ports.js';

const B2B = { id: 'b2b-must', secret: 'b2b-must-secret' } as const;

let browser: Browser;
let sigil: TestSigil;
let cb: CallbackServer;
let smtp: SmtpReceiver;
let url: string;

beforeAll(async () => {
  cb = await new CallbackServer().start();
  smtp = await new SmtpReceiver().start();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const base = browserConfig(cb.url);
  [browser, sigil] = await Promise.all([
    launchChromium(),
    startSigil({
      ...base,
      issuer: url,
      organizations: [
        { name: 'acme', displayName: 'Acme Corporation' },
        { name: 'globex', displayName: 'Globex' },
        { name: 'initech', displayName: 'Initech' },
      ],
      email: { smtpUrl: smtp.url, from: 'id@example.com' },
      clients: [
        ...(base.clients ?? []),
        {
          clientId: B2B.id,
          clientName: 'Example B2B App',
          clientSecrets: [B2B.secret],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid'],
          organizationUsage: 'require',
          redirectUris: [`${cb.url}/cb`],
          allowHttpRedirectUris: true,
        },
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
    }),
  ]);
  await sigil.context.management.organizations.putMember('acme', '1', []);
  await sigil.context.management.organizations.putMember('globex', '1', ['admin']);
  await sigil.app.listen({ host: '127.0.0.1', port });
});
afterAll(async () => {
  await Promise.allSettled([browser?.close(), sigil?.close(), cb?.close(), smtp?.close()]);
});

describe('the organization picker in Chromium', () => {
  it('lists both organizations after sign-in; picked with the keyboard, the client gets a code for it', async () => {
    const { context, page } = await newPage(browser);
    try {
      const { verifier, challenge } = pkce();
      const params = {
        client_id: B2B.id,
        redirect_uri: `${cb.url}/cb`,
        response_type: 'code',
        scope: 'openid',
        state: 'st',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      };
      const since = cb.hits.length;
      await page.goto(`${url}/connect/authorize?${new URLSearchParams(params)}`);
      await page.waitForURL(/\/account\/login\?interaction=/);
      await submitLogin(page, 'alice');
      await page.waitForURL(/\/account\/organization\?interaction=/);
      await page.getByRole('heading', { name: 'Choose an organization' }).waitFor();
      const radios = page.getByRole('radio');
      expect(await radios.count()).toBe(2);
      expect(await page.getByRole('group', { name: 'Your organizations' }).textContent()).toContain('Acme Corporation');
      expect(await audit(page)).toEqual([]);

      // Keyboard only: Tab to the first radio, arrow down to the second (which selects it), Enter submits.
      await page.locator('body').focus();
      let at = await focused(page);
      for (let i = 0; i < 10 && at.id !== 'input[organization]'; i++) {
        await page.keyboard.press('Tab');
        at = await focused(page);
      }
      expect(at).toEqual({ id: 'input[organization]', ring: true });
      await page.keyboard.press('ArrowDown');
      expect(await page.getByRole('radio', { name: /Globex/ }).isChecked()).toBe(true);
      await page.keyboard.press('Enter');

      const response = await callbackResponse(page, cb, since);
      expect(response.params.state).toBe('st');
      const code = response.params.code;
      expect(code).toBeTruthy();
      const res = await fetch(`${url}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(B2B.id, B2B.secret) },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: code as string,
          redirect_uri: `${cb.url}/cb`,
          code_verifier: verifier,
        }),
      });
      expect(res.status).toBe(200);
      const tokens = (await res.json()) as { access_token: string; id_token: string };
      for (const token of [tokens.access_token, tokens.id_token])
        expect(decodeJwt(token)).toMatchObject({ org_id: configOrganizationId('globex'), org_name: 'globex' });
    } finally {
      await context.close();
    }
  });
});

/** A call to /admin/v1 with a token of the automation client. */
async function admin(method: string, path: string, body: unknown): Promise<Response> {
  const { access_token } = await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret']);
  return fetch(`${url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('an organization invitation in Chromium', () => {
  it('arrives over SMTP; the signed-out invitee signs in from its page, comes back to it and accepts', async () => {
    const created = await admin('POST', '/users', {
      username: 'vera',
      password: 'orchard-lantern-58',
      email: 'vera@example.net',
      emailVerified: true,
    });
    expect(created.status).toBe(201);
    const { subjectId } = (await created.json()) as { subjectId: string };
    const sent = smtp.mails.length;
    expect(
      (await admin('POST', '/organizations/initech/invitations', { email: 'vera@example.net', roles: ['viewer'] }))
        .status,
    ).toBe(201);
    const mail = await smtp.waitFor(sent + 1);
    expect(mail.to).toEqual(['vera@example.net']);
    const link = /https?:\/\/\S+\/account\/invitations\/[A-Za-z0-9_%-]+/.exec(mail.text)?.[0];
    if (!link) throw new Error(`no invitation link in:\n${mail.text}`);

    const { context, page } = await newPage(browser);
    try {
      await page.goto(link);
      await page.getByRole('heading', { name: 'Invitation to an organization' }).waitFor();
      expect(await page.locator('main').textContent()).toContain('Initech');
      expect(await audit(page)).toEqual([]);
      await page.getByRole('link', { name: 'Sign in' }).click();
      await page.waitForURL(/\/account\/login\?return=/);
      await submitLogin(page, 'vera', 'orchard-lantern-58');
      await page.waitForURL((u) => u.href === link);
      await page.getByRole('button', { name: 'Accept the invitation' }).click();
      await page.getByText('You are now a member of Initech.').waitFor();
    } finally {
      await context.close();
    }
    const members = await sigil.context.management.organizations.members('initech', { limit: 10 });
    expect(members.members).toEqual([{ subject: subjectId, roles: ['viewer'] }]);
  });
});
