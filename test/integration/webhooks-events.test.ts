/**
 * Webhook events against a real receiver (a node HTTP server verifying every delivery with the
 * `standardwebhooks` package), on SQLite and PostgreSQL: each event of DESIGN §6b is delivered,
 * signed, with the body `{ type, timestamp, data }`, in order per subject; and no body holds a
 * secret, password, hash, token or code (every body is scanned for each one the test saw).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, codeParams, pkce, readResponse, redeem, webLike } from '../authorize-helpers.js';
import { dropSchema, passwordTokens, type TestSigil, testConfig } from '../helpers.js';
import { enrollTotp } from '../mfa-helpers.js';
import { type Api, CONFIG_SECRET, DIALECTS, receivedTypes, startWebhookSigil } from '../webhook-helpers.js';
import { type Receiver, startReceiver } from '../webhook-receiver.js';

const ALL_TYPES = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.signed_in',
  'user.sign_in_failed',
  'user.password_changed',
  'user.mfa_enrolled',
  'session.ended',
  'client.created',
  'client.updated',
  'client.deleted',
  'consent.granted',
  'consent.revoked',
  'organization.member_added',
  'organization.member_removed',
];

describe.each(DIALECTS)('webhook events on %s', (_dialect, storage) => {
  const url = storage();
  let receiver: Receiver;
  let sigil: TestSigil;
  let api: Api;

  beforeAll(async () => {
    receiver = await startReceiver([CONFIG_SECRET]);
    ({ sigil, api } = await startWebhookSigil(url, {
      webhooks: [{ name: 'everything', url: `${receiver.url}/hooks`, events: ['*'], secret: CONFIG_SECRET }],
      clients: [
        ...(testConfig().clients ?? []),
        webLike('web'),
        webLike('consenting', { requireConsent: true }),
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
    }));
  });
  afterAll(async () => {
    await sigil?.close();
    await receiver?.close();
    const schema = url === undefined ? undefined : new URL(url).searchParams.get('schema');
    if (schema) await dropSchema(schema);
  });

  it('delivers every event type, signed, in order per subject, and no body holds a secret', async () => {
    const secrets: string[] = [CONFIG_SECRET, 'automation-secret', 'ropc-secret', 'web-secret'];
    const password = 'harbour-violet-1959';
    const newPassword = 'meadow-copper-2077';
    secrets.push(password, newPassword);

    // user.created, user.updated, user.password_changed (management API).
    const created = await api('POST', '/users', { username: 'erin', password, email: 'erin@example.com' });
    expect(created.status, created.text).toBe(201);
    const subject = String(
      (created.body as { subjectId?: string }).subjectId ?? (created.body.user as { subjectId: string })?.subjectId,
    );
    const patched = await api(
      'PATCH',
      `/users/${subject}`,
      { claims: { name: 'Erin' } },
      { 'if-match': created.etag ?? '' },
    );
    expect(patched.status, patched.text).toBe(200);
    const again = await api('GET', `/users/${subject}`);
    const pw = await api('PATCH', `/users/${subject}`, { password: newPassword }, { 'if-match': again.etag ?? '' });
    expect(pw.status, pw.text).toBe(200);

    // user.signed_in and user.sign_in_failed (the password grant).
    const tokens = await passwordTokens(sigil, {
      username: 'erin',
      password: newPassword,
      scope: 'openid offline_access',
    });
    secrets.push(tokens.access_token, tokens.refresh_token ?? '', tokens.id_token ?? '');
    await expect(passwordTokens(sigil, { username: 'erin', password: 'not-her-password' })).rejects.toThrow(/400/);

    // user.mfa_enrolled (an authenticator app from /account) and consent.granted (the consent page).
    const browser = new Browser(sigil);
    await browser.signIn('erin', newPassword);
    const { secret: totp, recoveryCodes } = await enrollTotp(browser);
    secrets.push(totp, ...recoveryCodes);
    const { verifier, challenge } = pkce();
    const step = await browser.authorize(
      codeParams(challenge, { client_id: 'consenting', scope: 'openid profile', prompt: 'consent' }),
      { user: 'erin', remember: true },
    );
    const code = readResponse(step).params.get('code') ?? '';
    secrets.push(code, verifier);
    const redeemed = await redeem(sigil, code, { client: 'consenting', verifier });
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    secrets.push('consenting-secret', String(redeemed.json().access_token));

    // consent.revoked and session.ended (management API).
    expect((await api('DELETE', `/users/${subject}/grants/consenting`)).status).toBe(200);
    expect((await api('DELETE', `/users/${subject}/sessions`)).status).toBeLessThan(300);

    // client.created, client.updated, client.deleted.
    const client = await api('POST', '/clients', {
      clientId: 'billing',
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    });
    expect(client.status, client.text).toBe(201);
    secrets.push(String(client.body.secret));
    const clientPatch = await api(
      'PATCH',
      '/clients/billing',
      { clientName: 'Billing' },
      { 'if-match': client.etag ?? '' },
    );
    expect(clientPatch.status, clientPatch.text).toBe(200);
    expect((await api('DELETE', '/clients/billing')).status).toBe(204);

    // organization.member_added and organization.member_removed.
    expect((await api('POST', '/organizations', { name: 'acme', displayName: 'Acme' })).status).toBe(201);
    expect((await api('PUT', `/organizations/acme/members/${subject}`, { roles: ['billing'] })).status).toBe(201);
    expect((await api('DELETE', `/organizations/acme/members/${subject}`)).status).toBe(204);

    // Memberships ended with their organization, and with the user: organization.member_removed.
    const initech = await api('POST', '/organizations', { name: 'initech', displayName: 'Initech' });
    const initechId = String((initech.body.organization as { id: string }).id);
    expect((await api('PUT', `/organizations/initech/members/${subject}`, { roles: [] })).status).toBe(201);
    expect((await api('DELETE', '/organizations/initech')).status).toBe(204);
    const globex = await api('POST', '/organizations', { name: 'globex', displayName: 'Globex' });
    const globexId = String((globex.body.organization as { id: string }).id);
    expect((await api('PUT', `/organizations/globex/members/${subject}`, { roles: [] })).status).toBe(201);

    // user.deleted, the last of erin's.
    expect((await api('DELETE', `/users/${subject}`)).status).toBe(204);

    const bodies = await receivedTypes(receiver, ALL_TYPES);
    expect(new Set(bodies.map((b) => b.type))).toEqual(new Set(ALL_TYPES));
    // Every delivery verified with the secret; none came unsigned or wrongly signed.
    expect(receiver.received.every((r) => r.verified !== undefined)).toBe(true);
    for (const body of bodies) {
      expect(Object.keys(body).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(Number.isNaN(Date.parse(body.timestamp))).toBe(false);
    }

    // Order per subject: erin's events arrive in the order they happened.
    const erin = bodies.filter((b) => b.data.subject === subject).map((b) => b.type);
    expect(erin[0]).toBe('user.created');
    expect(erin.at(-1)).toBe('user.deleted');
    expect(erin.indexOf('user.updated')).toBeLessThan(erin.indexOf('user.password_changed'));
    expect(erin.indexOf('organization.member_added')).toBeLessThan(erin.indexOf('organization.member_removed'));
    const billing = bodies
      .filter((b) => b.data.clientId === 'billing' && b.type.startsWith('client.'))
      .map((b) => b.type);
    expect(billing).toEqual(['client.created', 'client.updated', 'client.deleted']);

    // What the data says.
    const of = (type: string) => bodies.find((b) => b.type === type)?.data;
    expect(of('user.created')).toMatchObject({ subject, username: 'erin', active: true });
    expect(of('user.updated')).toMatchObject({ subject, changed: ['claims'] });
    expect(of('user.password_changed')).toEqual({ subject });
    expect(of('user.signed_in')).toMatchObject({ subject, method: 'password_grant', clientId: 'ropc' });
    // A wrong password does not tell whose account it was.
    expect(of('user.sign_in_failed')).toEqual({ method: 'password_grant', clientId: 'ropc' });
    expect(of('user.mfa_enrolled')).toMatchObject({ subject, factor: 'totp' });
    expect(of('consent.granted')).toMatchObject({ subject, clientId: 'consenting', scopes: ['openid', 'profile'] });
    expect(of('consent.revoked')).toEqual({ subject, clientId: 'consenting' });
    expect(of('session.ended')).toMatchObject({ subject });
    expect(of('client.updated')).toMatchObject({ clientId: 'billing', clientName: 'Billing', changed: ['clientName'] });
    expect(of('organization.member_added')).toMatchObject({ subject, roles: ['billing'] });
    expect(of('user.deleted')).toEqual({ subject, username: 'erin' });
    const removals = bodies.filter((b) => b.type === 'organization.member_removed').map((b) => b.data.organizationId);
    expect(removals.slice(1)).toEqual([initechId, globexId]);
    expect(erin.slice(-2)).toEqual(['organization.member_removed', 'user.deleted']);

    // No secret, password, hash, token or code in any body.
    for (const r of receiver.received) {
      for (const s of secrets.filter((x) => x.length >= 6)) expect(r.body, `a body holds ${s}`).not.toContain(s);
      expect(r.body).not.toMatch(/\$argon2|sha256:|whsec_|clientSecrets|password_?hash/i);
    }
  });
});
