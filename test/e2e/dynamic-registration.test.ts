/**
 * End to end with a real relying party that registers itself: openid-client v6 finds Sigil
 * through RFC 8414 metadata, registers dynamically (RFC 7591) with an initial access token that
 * the registrar client got by client_credentials, then runs the authorization code flow with PKCE
 * with the new client (the user signs in and consents over the same server), and reads userinfo.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, isConsentPage, isLoginPage, readResponse } from '../authorize-helpers.js';
import { startSigil, tempDir, testConfig, type TestSigil } from '../helpers.js';
import { registrationConfig } from '../registration-helpers.js';
import { freePort } from './ports.js';

describe('openid-client registers dynamically and signs in with code + PKCE', () => {
  let sigil: TestSigil;
  let issuer: URL;
  beforeAll(async () => {
    const port = await freePort();
    sigil = await startSigil({ ...registrationConfig(), issuer: `http://127.0.0.1:${port}` });
    await sigil.app.listen({ port, host: '127.0.0.1' });
    issuer = new URL(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => sigil?.close());

  it('registers (client_secret_post), signs in, consents, redeems the code with the verifier, and reads userinfo', async () => {
    const registrar = await oidc.discovery(issuer, 'registrar', 'registrar-secret', undefined, {
      execute: [oidc.allowInsecureRequests],
      algorithm: 'oauth2',
    });
    const { access_token: initialAccessToken } = await oidc.clientCredentialsGrant(registrar, {
      scope: 'sigil:register',
    });

    const config = await oidc.dynamicClientRegistration(
      issuer,
      {
        redirect_uris: ['https://rp.example/cb'],
        token_endpoint_auth_method: 'client_secret_post',
        grant_types: ['authorization_code', 'refresh_token'],
        client_name: 'Self-registered RP',
        scope: 'openid profile offline_access',
      },
      undefined,
      { initialAccessToken, execute: [oidc.allowInsecureRequests], algorithm: 'oauth2' },
    );
    const client = config.clientMetadata();
    expect(client.client_id).toEqual(expect.any(String));
    expect(client.client_secret).toEqual(expect.any(String));
    expect(client.registration_access_token).toEqual(expect.any(String));

    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: 'https://rp.example/cb',
      scope: 'openid profile offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const browser = new Browser(sigil);
    let step = await browser.follow(await browser.get(url.href));
    expect(isLoginPage(step)).toBe(true);
    step = await browser.follow(await browser.submitLogin(step, 'alice', 'alice'));
    // A dynamic client always asks for consent, naming itself.
    expect(isConsentPage(step)).toBe(true);
    expect(step.body).toContain('Self-registered RP');
    step = await browser.consent(step, 'yes');
    const response = readResponse(step);

    const tokens = await oidc.authorizationCodeGrant(config, new URL(response.location ?? ''), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()).toMatchObject({ iss: issuer.href.replace(/\/$/, ''), sub: '1', aud: client.client_id });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const info = await oidc.fetchUserInfo(config, tokens.access_token, '1');
    expect(info).toMatchObject({ sub: '1', name: 'Alice Smith' });
    // The use was recorded for the unused-client clean-up.
    const record = await sigil.context.store.registrations.find(client.client_id);
    expect(record?.lastUsedAt).toBeGreaterThan(0);

    // Without the verifier the code would not redeem: a second run proves PKCE is enforced.
    const again = await browser.follow(
      await browser.get(
        oidc.buildAuthorizationUrl(config, { redirect_uri: 'https://rp.example/cb', scope: 'openid' }).href,
      ),
    );
    expect(readResponse(again).params.get('error')).toBe('invalid_request');
  });
});

describe('sigil clients initial-token', () => {
  const run = promisify(execFile);
  const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

  it('prints a token once that registers --max-registrations clients at a running node, then no more', async () => {
    const { dir, cleanup } = tempDir();
    const storage = `sqlite:${join(dir, 'sigil.db')}`;
    const config = { ...testConfig(), ...registrationConfig(), storage };
    const configFile = join(dir, 'sigil.json');
    writeFileSync(configFile, JSON.stringify(config));
    const sigil = await startSigil(config);
    try {
      const { stdout, stderr } = await run(process.execPath, [
        CLI,
        'clients',
        'initial-token',
        '--max-registrations',
        '2',
        '--lifetime',
        '600',
        '--config',
        configFile,
        '--storage',
        storage,
      ]);
      const token = stdout.trim();
      expect(token).toMatch(/^sigil_iat_[A-Za-z0-9_-]{43}$/);
      expect(stderr).toContain('2 registration(s)');
      const register = () =>
        sigil.app.inject({
          method: 'POST',
          url: '/connect/register',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          payload: { redirect_uris: ['https://rp.example/cb'] },
        });
      expect((await register()).statusCode).toBe(201);
      expect((await register()).statusCode).toBe(201);
      expect((await register()).statusCode).toBe(401);
      const bad = await run(process.execPath, [
        CLI,
        'clients',
        'initial-token',
        '--max-registrations',
        '0',
        '--config',
        configFile,
        '--storage',
        storage,
      ]).catch((err: { code: number; stderr: string }) => err);
      expect((bad as { code: number }).code).toBe(2);
    } finally {
      await sigil.close();
      cleanup();
    }
  });
});
