/**
 * Security checks of directory users against a real OpenLDAP server (Debian slapd,
 * test/ldap-server.mjs): whether a token acts for a user or for a client is read from the token,
 * never from a directory user's subject naming a client (or a client's id naming a user).
 */
import { decodeJwt } from 'jose';
import { Attribute, Change } from 'ldapts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeUrl, Browser, codeParams, isLoginPage, pkce, readResponse, redeem, webLike } from '../authorize-helpers.js';
import { clientTokens, introspect, startSigil, userinfo, type TestSigil } from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';
import { LDAP_USERS, type LdapUser, PEOPLE, type Slapd, startSlapd } from '../ldap-server.mjs';

const ACR_MFA = 'urn:sigil:acr:mfa';

/** A directory user of the admins group, named like a client. */
const OPS: LdapUser = { uid: 'ops', password: 'ops-pw', cn: 'Ops Person', givenName: 'Ops', sn: 'Person', mail: 'ops@corp.example', groups: ['admins'] };
/** A directory user named like a client_credentials client. */
const ROBOT: LdapUser = { uid: 'robot', password: 'robot-pw', cn: 'Robot Namesake', givenName: 'Robot', sn: 'Namesake', mail: 'robot@corp.example', groups: ['devs'] };

/** Locks a directory account as OpenLDAP's password policy does (pwdAccountLockedTime, draft-behera §5.3.3). */
async function lock(slapd: Slapd, uid: string): Promise<void> {
  const admin = await slapd.admin();
  try {
    await admin.modify(`uid=${uid},${PEOPLE}`, new Change({ operation: 'add', modification: new Attribute({ type: 'pwdAccountLockedTime', values: ['000001010000Z'] }) }));
  } finally {
    await admin.unbind();
  }
}

describe('directory users named like clients', () => {
  let slapd: Slapd;
  let sigil: TestSigil;

  beforeAll(async () => {
    slapd = await startSlapd([...LDAP_USERS, OPS, ROBOT]);
    sigil = await startSigil({
      users: [],
      rateLimits: { maxFailures: 1000, windowSeconds: 60 },
      admin: { userRole: 'admins' },
      clients: [
        // The client's id is the subject of the directory user `ops` (subjectAttribute uid).
        webLike('ops', { allowedScopes: ['openid', 'profile', 'scim', 'sigil:admin:read'] }),
        { clientId: 'robot', clientSecrets: ['robot-secret'], allowedGrantTypes: ['client_credentials'], allowedScopes: ['scim'] },
      ],
      // uid as the subject: a directory whose subjects are names, as some deployments choose.
      userDirectories: [slapd.directoryConfig({ subjectAttribute: 'uid', claimsCacheSeconds: 0 })] as never,
    });
  });
  afterAll(async () => {
    await sigil?.close();
    await slapd?.close();
  });

  /** A code flow at client `ops` for the directory user `ops` with a TOTP step; the token response. */
  async function adminTokens(): Promise<{ access_token: string; scope: string }> {
    const enrol = new Browser(sigil);
    await enrol.signIn('ops', 'ops-pw');
    const { secret } = await enrollTotp(enrol);
    const b = new Browser(sigil);
    const { challenge, verifier } = pkce();
    const login = await b.follow(await b.get(authorizeUrl(codeParams(challenge, { client_id: 'ops', scope: 'openid scim sigil:admin:read', acr_values: ACR_MFA }))));
    expect(isLoginPage(login), login.body).toBe(true);
    const mfa = await b.follow(await b.submitLogin(login, 'ops', 'ops-pw'));
    expect(isMfaPage(mfa), mfa.body).toBe(true);
    const code = readResponse(await submitCode(b, mfa, totpCode(secret, 1))).params.get('code') ?? '';
    const res = await redeem(sigil, code, { client: 'ops', verifier });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('refuses a disabled directory user whose subject is a client id at userinfo, /scim/v2, /admin/v1 and introspection', async () => {
    const tokens = await adminTokens();
    const claims = decodeJwt(tokens.access_token);
    // The collision itself: the token's sub and client_id are the same string.
    expect(claims).toMatchObject({ sub: 'ops', client_id: 'ops' });
    expect(tokens.scope.split(' ')).toEqual(expect.arrayContaining(['scim', 'sigil:admin:read']));
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    // While the user is active, the token works and acts for the user.
    expect((await userinfo(sigil, tokens.access_token)).statusCode).toBe(200);
    expect((await sigil.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: bearer })).statusCode).toBe(200);
    expect((await sigil.app.inject({ method: 'GET', url: '/admin/v1/clients', headers: bearer })).statusCode).toBe(200);

    await lock(slapd, 'ops');
    const info = await userinfo(sigil, tokens.access_token);
    expect(info.statusCode).toBe(401);
    expect(info.headers['www-authenticate']).toContain('error="invalid_token"');
    for (const url of ['/scim/v2/Users', '/admin/v1/clients']) {
      const res = await sigil.app.inject({ method: 'GET', url, headers: bearer });
      expect(res.statusCode, url).toBe(401);
      expect(res.headers['www-authenticate'], url).toContain('error="invalid_token", error_description="the user is no longer active"');
    }
    const seen = await introspect(sigil, tokens.access_token, ['ops', 'ops-secret']);
    expect(seen.json()).toEqual({ active: false });
  });

  it('keeps a client\'s own token the client\'s when a disabled directory user has the client\'s id as subject', async () => {
    await lock(slapd, 'robot');
    const { access_token } = await clientTokens(sigil, 'scim', ['robot', 'robot-secret']);
    const claims = decodeJwt(access_token);
    expect(claims).toMatchObject({ sub: 'robot', client_id: 'robot' });
    expect(claims.auth_time).toBeUndefined();
    // The client's own token: not refused for the namesake user, and it acts for no user.
    const scim = await sigil.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { authorization: `Bearer ${access_token}` } });
    expect(scim.statusCode, scim.body).toBe(200);
    expect((await introspect(sigil, access_token, ['robot', 'robot-secret'])).json().active).toBe(true);
    // Nor does it pass for the user at userinfo.
    expect((await userinfo(sigil, access_token)).statusCode).toBe(403);
  });
});
