/**
 * The profile service of `createSigil` (as Duende's IProfileService): asked for the claims
 * of identity tokens, access tokens and userinfo with the subject, the client, the requested claim
 * names and the caller; its `isActive` ends refresh, introspection and userinfo for the user.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProfileDataRequest, ProfileService } from '../../src/index.js';
import { Browser, codeParams, pkce, redeem, webLike, getCode } from '../authorize-helpers.js';
import {
  clientTokens,
  introspect,
  passwordTokens,
  startSigil,
  testConfig,
  tokenRequest,
  userinfo,
  type TestSigil,
} from '../helpers.js';

/** A profile service over a table of extra claims kept by the library user, with an off switch per user. */
class TableProfile implements ProfileService {
  readonly asked: Array<Pick<ProfileDataRequest, 'subject' | 'requestedClaims' | 'caller'> & { clientId: string }> = [];
  readonly inactive = new Set<string>();
  async getProfileData(req: ProfileDataRequest): Promise<Record<string, unknown>> {
    this.asked.push({
      subject: req.subject,
      clientId: req.caller === 'saml_assertion' ? req.serviceProvider.entityId : req.client.clientId,
      requestedClaims: req.requestedClaims,
      caller: req.caller,
    });
    const released: Record<string, unknown> = { sub: 'forged', iss: 'https://evil.example', scope: 'admin' };
    for (const name of req.requestedClaims) if (name in req.userClaims) released[name] = req.userClaims[name];
    released.cost_center = `cc-${req.caller}`;
    return released;
  }
  async isActive(subject: string): Promise<boolean> {
    return !this.inactive.has(subject);
  }
}

describe('profile service', () => {
  let sigil: TestSigil;
  const profile = new TableProfile();
  beforeAll(async () => {
    const base = testConfig();
    sigil = await startSigil(
      { rateLimits: { maxFailures: 1000, windowSeconds: 60 }, clients: [...(base.clients ?? []), webLike('web')] },
      { profileService: profile },
    );
  });
  afterAll(async () => sigil?.close());

  it('releases access-token and userinfo claims as the service answers, never its protocol claims', async () => {
    profile.asked.length = 0;
    const tokens = await passwordTokens(sigil, { scope: 'openid profile api1' });
    const at = decodeJwt(tokens.access_token);
    // api1's userClaims (role) were requested; the service added cost_center and tried to forge sub, iss, scope.
    expect(at).toMatchObject({
      sub: '1',
      iss: 'http://127.0.0.1:5999',
      scope: 'openid profile api1',
      role: ['admin'],
      cost_center: 'cc-access_token',
    });
    expect(profile.asked).toEqual([
      { subject: '1', clientId: 'ropc', requestedClaims: ['role'], caller: 'access_token' },
    ]);
    const info = await userinfo(sigil, tokens.access_token);
    expect(info.json()).toEqual({
      sub: '1',
      name: 'Alice Smith',
      given_name: 'Alice',
      family_name: 'Smith',
      cost_center: 'cc-userinfo',
    });
    expect(profile.asked.at(-1)).toMatchObject({
      caller: 'userinfo',
      requestedClaims: expect.arrayContaining(['name', 'given_name', 'family_name']),
    });
  });

  it('is asked for identity-token claims requested with the claims parameter (OIDC Core §5.5)', async () => {
    profile.asked.length = 0;
    const b = new Browser(sigil);
    const { verifier, challenge } = pkce();
    const code = await getCode(
      b,
      codeParams(challenge, { scope: 'openid', claims: JSON.stringify({ id_token: { email: null } }) }),
    );
    const res = await redeem(sigil, code, { verifier });
    const id = decodeJwt(res.json<{ id_token: string }>().id_token);
    expect(id).toMatchObject({ sub: '1', email: 'alice@example.com', cost_center: 'cc-id_token' });
    expect(profile.asked).toContainEqual({
      subject: '1',
      clientId: 'web',
      requestedClaims: ['email'],
      caller: 'id_token',
    });
  });

  it('is not asked when nothing is requested', async () => {
    profile.asked.length = 0;
    await passwordTokens(sigil, { scope: 'openid' });
    expect(profile.asked).toEqual([]);
  });

  it('an inactive user: refresh invalid_grant, introspection active:false, userinfo invalid_token, no new sign-in; client tokens unaffected', async () => {
    const tokens = await passwordTokens(sigil, {
      scope: 'openid api1 offline_access',
      username: 'bob',
      password: 'bob',
    });
    const m2m = await clientTokens(sigil, 'api1');
    expect((await introspect(sigil, tokens.access_token)).json().active).toBe(true);
    profile.inactive.add('2');
    try {
      const refresh = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, [
        'ropc',
        'ropc-secret',
      ]);
      expect(refresh.statusCode).toBe(400);
      expect(refresh.json()).toEqual({ error: 'invalid_grant', error_description: 'the user is no longer active' });
      expect((await introspect(sigil, tokens.access_token)).json()).toEqual({ active: false });
      expect((await introspect(sigil, tokens.refresh_token!, ['ropc', 'ropc-secret'])).json()).toEqual({
        active: false,
      });
      expect((await userinfo(sigil, tokens.access_token)).statusCode).toBe(401);
      // A new sign-in gets the wrong password's answer.
      const again = await tokenRequest(
        sigil,
        { grant_type: 'password', username: 'bob', password: 'bob', scope: 'openid' },
        ['ropc', 'ropc-secret'],
      );
      expect(again.json()).toEqual({ error: 'invalid_grant', error_description: 'invalid username or password' });
      expect((await introspect(sigil, m2m.access_token)).json().active).toBe(true);
    } finally {
      profile.inactive.delete('2');
    }
    expect((await introspect(sigil, tokens.access_token)).json().active).toBe(true);
  });
});
