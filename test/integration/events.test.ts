/**
 * Audit events (`src/events/`, named after Duende IdentityServer's): what each outcome emits to
 * subscribers, and that no token value ever appears in an event.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SigilEvent } from '../../src/index.js';
import {
  clientTokens,
  introspect,
  passwordTokens,
  postForm,
  startSigil,
  tokenRequest,
  type TestSigil,
} from '../helpers.js';

describe('audit events', () => {
  let sigil: TestSigil;
  let events: SigilEvent[] = [];
  /** Every event of this file, for the final no-token-values check. */
  const history: SigilEvent[] = [];
  const issued: string[] = [];
  let unsubscribe: () => void;

  beforeAll(async () => {
    sigil = await startSigil({ rateLimits: { maxFailures: 1000, windowSeconds: 60 } });
    unsubscribe = sigil.subscribe((e) => {
      events.push(e);
      history.push(e);
    });
  });
  afterAll(async () => {
    unsubscribe();
    await sigil.close();
  });
  beforeEach(() => {
    events = [];
  });

  const named = (name: SigilEvent['name']) => events.filter((e) => e.name === name);
  const remember = (body: { access_token: string; refresh_token?: string; id_token?: string }) => {
    issued.push(
      body.access_token,
      ...(body.refresh_token ? [body.refresh_token] : []),
      ...(body.id_token ? [body.id_token] : []),
    );
    return body;
  };

  it('emits token_issued for client_credentials with clientId, grantType, scopes and token types', async () => {
    remember(await clientTokens(sigil, 'api1'));
    const [e] = named('token_issued');
    expect(e).toMatchObject({
      name: 'token_issued',
      endpoint: 'token',
      clientId: 'm2m',
      grantType: 'client_credentials',
      scopes: ['api1'],
      tokenTypes: ['access_token'],
    });
    expect(e?.subjectId).toBeUndefined();
    expect(Number.isNaN(Date.parse(e!.time))).toBe(false);
  });

  it('emits user_login_succeeded and token_issued with the subject for the password grant', async () => {
    remember(await passwordTokens(sigil, { scope: 'openid api1 offline_access' }));
    expect(named('user_login_succeeded')).toEqual([expect.objectContaining({ clientId: 'ropc', subjectId: '1' })]);
    const [e] = named('token_issued');
    expect(e).toMatchObject({
      clientId: 'ropc',
      subjectId: '1',
      grantType: 'password',
      scopes: ['openid', 'api1', 'offline_access'],
    });
    expect([...(e?.tokenTypes ?? [])].sort()).toEqual(['access_token', 'id_token', 'refresh_token']);
  });

  it('emits user_login_failed and token_issue_failed for a wrong password', async () => {
    await tokenRequest(sigil, { grant_type: 'password', username: 'alice', password: 'wrong' }, [
      'ropc',
      'ropc-secret',
    ]);
    expect(named('user_login_failed')).toEqual([expect.objectContaining({ clientId: 'ropc', endpoint: 'token' })]);
    expect(named('token_issue_failed')).toEqual([
      expect.objectContaining({
        clientId: 'ropc',
        grantType: 'password',
        error: 'invalid_grant',
        remoteAddress: expect.any(String),
      }),
    ]);
    // The password never shows up.
    expect(JSON.stringify(events)).not.toContain('wrong');
  });

  it('emits client_authentication_failed for a wrong secret, without the secret', async () => {
    await tokenRequest(sigil, { grant_type: 'client_credentials' }, ['m2m', 'not-the-secret']);
    expect(named('client_authentication_failed')).toEqual([
      expect.objectContaining({
        endpoint: 'token',
        clientId: 'm2m',
        error: 'invalid_client',
        remoteAddress: expect.any(String),
      }),
    ]);
    expect(named('token_issued')).toHaveLength(0);
    expect(JSON.stringify(events)).not.toContain('not-the-secret');
  });

  it('emits token_issue_failed for an invalid scope, with clientId and error', async () => {
    await tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'openid' }, ['m2m', 'm2m-secret']);
    expect(named('token_issue_failed')).toEqual([
      expect.objectContaining({ clientId: 'm2m', grantType: 'client_credentials', error: 'invalid_scope' }),
    ]);
  });

  it('emits token_issue_failed without echoing a presented refresh token', async () => {
    const tokens = remember(await passwordTokens(sigil, { scope: 'api1 offline_access' }));
    const stolen = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, [
      'other',
      'other-secret',
    ]);
    expect(stolen.statusCode).toBe(400);
    expect(named('token_issue_failed')).toEqual([
      expect.objectContaining({ clientId: 'other', grantType: 'refresh_token', error: 'invalid_grant' }),
    ]);
  });

  it('emits token_issued for a refresh', async () => {
    const tokens = remember(await passwordTokens(sigil, { scope: 'openid api1 offline_access' }));
    events = [];
    const res = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, [
      'ropc',
      'ropc-secret',
    ]);
    remember(res.json());
    expect(named('token_issued')).toEqual([
      expect.objectContaining({ clientId: 'ropc', subjectId: '1', grantType: 'refresh_token' }),
    ]);
  });

  it('emits token_revoked for refresh and access token revocation', async () => {
    const tokens = remember(await passwordTokens(sigil, { scope: 'api1 offline_access' }));
    const cc = remember(await clientTokens(sigil, 'api1'));
    events = [];
    await postForm(sigil, '/connect/revocation', { token: tokens.refresh_token! }, ['ropc', 'ropc-secret']);
    await postForm(sigil, '/connect/revocation', { token: cc.access_token }, ['m2m', 'm2m-secret']);
    expect(named('token_revoked')).toEqual([
      expect.objectContaining({
        endpoint: 'revocation',
        clientId: 'ropc',
        subjectId: '1',
        tokenTypes: ['refresh_token'],
      }),
      expect.objectContaining({ endpoint: 'revocation', clientId: 'm2m', tokenTypes: ['access_token'] }),
    ]);
  });

  it("success events carry the caller's address, user agent and a request id of their own", async () => {
    const ua = { 'user-agent': 'audit-test/1.0' };
    const cc = await postForm(
      sigil,
      '/connect/token',
      { grant_type: 'client_credentials', scope: 'api1' },
      ['m2m', 'm2m-secret'],
      ua,
    );
    const pw = await postForm(
      sigil,
      '/connect/token',
      { grant_type: 'password', username: 'alice', password: 'alice', scope: 'openid api1' },
      ['ropc', 'ropc-secret'],
      ua,
    );
    await postForm(
      sigil,
      '/connect/revocation',
      { token: remember(cc.json()).access_token },
      ['m2m', 'm2m-secret'],
      ua,
    );
    remember(pw.json());
    const successes = [...named('token_issued'), ...named('user_login_succeeded'), ...named('token_revoked')];
    expect(successes).toHaveLength(4);
    for (const e of successes)
      expect(e).toMatchObject({
        remoteAddress: '127.0.0.1',
        userAgent: 'audit-test/1.0',
        requestId: expect.stringMatching(/^[\w-]{16,}$/),
      });
    // One id per request: the password grant's two events share it, the other requests have their own.
    expect(new Set(successes.map((e) => e.requestId)).size).toBe(3);
    expect(named('user_login_succeeded')[0]!.requestId).toBe(named('token_issued')[1]!.requestId);
  });

  it('emits no token_revoked when nothing was revoked', async () => {
    const tokens = remember(await passwordTokens(sigil, { scope: 'api1 offline_access' }));
    events = [];
    await postForm(sigil, '/connect/revocation', { token: tokens.refresh_token! }, ['other', 'other-secret']);
    await postForm(sigil, '/connect/revocation', { token: 'unknown' }, ['ropc', 'ropc-secret']);
    expect(named('token_revoked')).toHaveLength(0);
  });

  it('emits api_authentication_failed for a wrong API secret at introspection', async () => {
    await introspect(sigil, 'whatever', ['api1', 'not-the-api-secret']);
    expect(named('api_authentication_failed')).toEqual([
      expect.objectContaining({ endpoint: 'introspection', error: 'invalid_client' }),
    ]);
    expect(JSON.stringify(events)).not.toContain('not-the-api-secret');
  });

  it('keeps working when a subscriber throws', async () => {
    const off = sigil.subscribe(() => {
      throw new Error('subscriber failure');
    });
    const offAsync = sigil.subscribe(async () => {
      throw new Error('async subscriber failure');
    });
    try {
      const res = await tokenRequest(sigil, { grant_type: 'client_credentials', scope: 'api1' }, ['m2m', 'm2m-secret']);
      expect(res.statusCode).toBe(200);
      remember(res.json());
      expect(named('token_issued')).toHaveLength(1);
    } finally {
      off();
      offAsync();
    }
  });

  it('never carries a token value in any event of this file', async () => {
    // One more full lifecycle, then check everything recorded in this file.
    const tokens = remember(await passwordTokens(sigil, { scope: 'openid api1 offline_access' }));
    const refreshed = await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, [
      'ropc',
      'ropc-secret',
    ]);
    remember(refreshed.json());
    await tokenRequest(sigil, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, [
      'ropc',
      'ropc-secret',
    ]);
    await postForm(sigil, '/connect/revocation', { token: tokens.access_token }, ['ropc', 'ropc-secret']);

    expect(history.length).toBeGreaterThan(20);
    expect(issued.length).toBeGreaterThan(10);
    const text = JSON.stringify(history);
    for (const token of issued) {
      expect(text).not.toContain(token);
      // Nor a recognisable piece of one (a JWT's signature, a handle's first 20 characters).
      expect(text).not.toContain(token.split('.').pop()!.slice(0, 20));
    }
  });
});
