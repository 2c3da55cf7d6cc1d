import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Decision,
  type DecisionClient,
  type DecisionFacts,
  type DecisionRequest,
  type DecisionSession,
  decide,
  mfaRequired,
  pageOf,
  stepUp,
} from '../../src/interaction/decide.js';
import { ACR_FEDERATED, ACR_MFA, ACR_PASSWORD } from '../../src/users/acr.js';

const NOW = 1_700_000_000;

const client = (over: Partial<DecisionClient> = {}): DecisionClient => ({
  enableLocalLogin: true,
  identityProviderRestrictions: [],
  requireConsent: false,
  ...over,
});

const request = (
  over: Partial<Omit<DecisionRequest, 'prompt'>> & {
    prompt?: string[];
    acrValues?: string[];
    idp?: string;
    tenant?: string;
  } = {},
): DecisionRequest => {
  const { prompt, acrValues, idp, tenant, ...rest } = over;
  return {
    prompt: new Set(prompt ?? []),
    acr: { idp: idp ?? null, tenant: tenant ?? null, acr: acrValues ?? [] },
    acrRequested: acrValues !== undefined,
    scopes: ['openid', 'profile'],
    redirectUri: 'https://app.example/callback',
    ...rest,
  };
};

const session = (over: Partial<DecisionSession> = {}): DecisionSession => ({
  subjectId: '1',
  authTime: NOW - 60,
  amr: ['pwd'],
  idp: 'local',
  tenant: null,
  ...over,
});

const facts = (over: Partial<DecisionFacts> = {}): DecisionFacts => ({
  now: NOW,
  upstreams: [],
  secondStep: 'none',
  freshSignInSeconds: 300,
  ...over,
});

const active = { isActive: true };
const ISSUE: Decision = { kind: 'issue', scopes: ['openid', 'profile'] };

/** decide with a signed-in, active user unless given otherwise. */
function run(
  req: DecisionRequest,
  over: {
    session?: DecisionSession | null;
    user?: { isActive: boolean } | null;
    client?: DecisionClient;
    facts?: DecisionFacts;
  } = {},
): Decision {
  const s = over.session === null ? undefined : (over.session ?? session());
  const u = over.user === null ? undefined : (over.user ?? active);
  return decide(req, s, u, over.client ?? client(), over.facts ?? facts());
}

const errorOf = (d: Decision) => (d.kind === 'error' ? d.error : undefined);

describe('decide: sign-in (OIDC Core §3.1.2.3)', () => {
  it('no session, or no user behind it, or an inactive one: the login page', () => {
    expect(run(request(), { session: null })).toEqual({ kind: 'login' });
    expect(run(request(), { user: null })).toEqual({ kind: 'login' });
    expect(run(request(), { user: { isActive: false } })).toEqual({ kind: 'login' });
  });

  it('a live session of an active user with nothing else asked: issue', () => {
    expect(run(request())).toEqual(ISSUE);
  });

  it('prompt=none where a sign-in is needed: login_required (§3.1.2.6), never a page', () => {
    expect(errorOf(run(request({ prompt: ['none'] }), { session: null }))).toBe('login_required');
    expect(errorOf(run(request({ prompt: ['none'], maxAge: 0 })))).toBe('login_required');
    expect(run(request({ prompt: ['none'] }))).toEqual(ISSUE);
  });

  it('prompt=login and prompt=select_account sign in again, unless the sign-in was made for this request', () => {
    for (const prompt of ['login', 'select_account']) {
      expect(run(request({ prompt: [prompt] }))).toEqual({ kind: 'login' });
      expect(run(request({ prompt: [prompt] }), { facts: facts({ pending: { loginAt: NOW - 60 } }) })).toEqual(ISSUE);
      // A sign-in older than the one made for this request does not count.
      expect(run(request({ prompt: [prompt] }), { facts: facts({ pending: { loginAt: NOW - 59 } }) })).toEqual({
        kind: 'login',
      });
    }
  });

  it('max_age: a sign-in older than max_age seconds signs in again; max_age=0 always does, except just after signing in', () => {
    expect(run(request({ maxAge: 60 }))).toEqual(ISSUE);
    expect(run(request({ maxAge: 59 }))).toEqual({ kind: 'login' });
    expect(run(request({ maxAge: 0 }), { session: session({ authTime: NOW }) })).toEqual({ kind: 'login' });
    expect(
      run(request({ maxAge: 0 }), { session: session({ authTime: NOW }), facts: facts({ pending: { loginAt: NOW } }) }),
    ).toEqual(ISSUE);
  });

  it('max_age > 0 asks for a sign-in exactly when the session is older than it (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 ** 9 }), fc.integer({ min: 0, max: 10 ** 9 }), (maxAge, age) => {
        const d = run(request({ maxAge }), { session: session({ authTime: NOW - age }) });
        expect(d.kind).toBe(age > maxAge ? 'login' : 'issue');
      }),
    );
  });

  it('an id_token_hint or a claims sub naming another user signs in, even right after a sign-in (§3.1.2.2)', () => {
    const justSignedIn = facts({ pending: { loginAt: NOW - 60 } });
    expect(run(request({ hintSubject: '2' }), { facts: justSignedIn })).toEqual({ kind: 'login' });
    expect(run(request({ claimsSubject: '2' }), { facts: justSignedIn })).toEqual({ kind: 'login' });
    expect(run(request({ hintSubject: '1', claimsSubject: '1' }))).toEqual(ISSUE);
  });

  it('acr_values tenant:<name> needs a session of that tenant', () => {
    expect(run(request({ tenant: 'acme' }))).toEqual({ kind: 'login' });
    expect(run(request({ tenant: 'acme' }), { session: session({ tenant: 'acme' }) })).toEqual(ISSUE);
  });

  it('a session from a provider the client may not use, or a local one for a client without local login, signs in', () => {
    const restricted = client({ identityProviderRestrictions: ['corp'] });
    expect(run(request(), { client: restricted, session: session({ idp: 'other' }) })).toEqual({ kind: 'login' });
    expect(run(request(), { client: restricted, session: session({ idp: 'corp' }) })).toEqual(ISSUE);
    expect(run(request(), { client: restricted })).toEqual(ISSUE);
    expect(run(request(), { client: client({ enableLocalLogin: false }) })).toEqual({ kind: 'login' });
  });
});

describe('decide: upstream providers (acr_values idp:<name>)', () => {
  const corp = facts({ upstreams: ['corp'] });

  it('idp:<name> of a provider open to the client goes there unless the session came from it', () => {
    expect(run(request({ idp: 'corp' }), { facts: corp })).toEqual({ kind: 'upstream', provider: 'corp' });
    expect(run(request({ idp: 'corp' }), { facts: corp, session: null })).toEqual({
      kind: 'upstream',
      provider: 'corp',
    });
    expect(
      run(request({ idp: 'corp' }), { facts: corp, session: session({ idp: 'corp', amr: ['external'] }) }),
    ).toEqual(ISSUE);
  });

  it('an unknown or closed provider is ignored: the local login page, never an error revealing configuration', () => {
    expect(run(request({ idp: 'nope' }), { facts: corp, session: null })).toEqual({ kind: 'login' });
    expect(run(request({ idp: 'corp' }), { session: null })).toEqual({ kind: 'login' });
    expect(run(request({ idp: 'nope' }), { facts: corp })).toEqual(ISSUE);
  });

  it('a client without local login goes to its only provider; with several, to the login page', () => {
    const noLocal = client({ enableLocalLogin: false });
    expect(run(request(), { client: noLocal, facts: corp, session: null })).toEqual({
      kind: 'upstream',
      provider: 'corp',
    });
    expect(run(request(), { client: noLocal, facts: corp })).toEqual({ kind: 'upstream', provider: 'corp' });
    expect(run(request(), { client: noLocal, facts: facts({ upstreams: ['corp', 'other'] }), session: null })).toEqual({
      kind: 'login',
    });
  });

  it('prompt=none where the provider must sign in: login_required', () => {
    expect(errorOf(run(request({ idp: 'corp', prompt: ['none'] }), { facts: corp }))).toBe('login_required');
  });
});

describe('decide: essential acr (OIDC Core §5.5.1.1, Unmet Authentication Requirements §4)', () => {
  it('a class no sign-in open to the client achieves: unmet_authentication_requirements, before anything else', () => {
    expect(errorOf(run(request({ essentialAcr: [ACR_FEDERATED] })))).toBe('unmet_authentication_requirements');
    expect(errorOf(run(request({ essentialAcr: ['urn:other'], prompt: ['none'] }), { session: null }))).toBe(
      'unmet_authentication_requirements',
    );
    expect(
      errorOf(
        run(request({ essentialAcr: [ACR_PASSWORD] }), {
          client: client({ enableLocalLogin: false }),
          facts: facts({ upstreams: ['corp'] }),
        }),
      ),
    ).toBe('unmet_authentication_requirements');
  });

  it('a class the session achieved is met; one a new sign-in could achieve signs in; after that sign-in, unmet', () => {
    expect(run(request({ essentialAcr: [ACR_PASSWORD] }))).toEqual(ISSUE);
    const corp = facts({ upstreams: ['corp'] });
    expect(run(request({ essentialAcr: [ACR_FEDERATED] }), { facts: corp })).toEqual({ kind: 'login' });
    expect(
      errorOf(
        run(request({ essentialAcr: [ACR_FEDERATED] }), {
          facts: facts({ upstreams: ['corp'], pending: { loginAt: NOW - 60 } }),
        }),
      ),
    ).toBe('unmet_authentication_requirements');
    expect(
      run(request({ essentialAcr: [ACR_FEDERATED] }), {
        facts: corp,
        session: session({ idp: 'corp', amr: ['external'] }),
      }),
    ).toEqual(ISSUE);
  });

  it('MFA asked of a local session without it is added by step-up, not by a new sign-in', () => {
    expect(run(request({ essentialAcr: [ACR_MFA] }), { facts: facts({ secondStep: 'verify' }) })).toEqual({
      kind: 'second-factor',
    });
    // A federated session without MFA must sign in again (Sigil adds no factor to an upstream sign-in).
    expect(
      run(request({ essentialAcr: [ACR_MFA] }), {
        facts: facts({ upstreams: ['corp'] }),
        session: session({ idp: 'corp', amr: ['external'] }),
      }),
    ).toEqual({
      kind: 'login',
    });
  });
});

describe('decide: the second factor (src/mfa/)', () => {
  it('a session without MFA takes the step its user needs; with MFA, none', () => {
    expect(run(request(), { facts: facts({ secondStep: 'verify' }) })).toEqual({ kind: 'second-factor' });
    expect(run(request(), { facts: facts({ secondStep: 'security-key' }) })).toEqual({ kind: 'second-factor' });
    expect(run(request(), { facts: facts({ secondStep: 'enroll' }) })).toEqual({ kind: 'enrol' });
    expect(
      run(request(), { facts: facts({ secondStep: 'verify' }), session: session({ amr: ['pwd', 'otp', 'mfa'] }) }),
    ).toEqual(ISSUE);
  });

  it('enrolment needs a recent sign-in (freshSignInSeconds); an older session signs in again', () => {
    expect(
      run(request(), { facts: facts({ secondStep: 'enroll' }), session: session({ authTime: NOW - 300 }) }),
    ).toEqual({ kind: 'enrol' });
    expect(
      run(request(), { facts: facts({ secondStep: 'enroll' }), session: session({ authTime: NOW - 301 }) }),
    ).toEqual({ kind: 'login' });
  });

  it('prompt=none where a second factor is needed: interaction_required', () => {
    expect(errorOf(run(request({ prompt: ['none'] }), { facts: facts({ secondStep: 'verify' }) }))).toBe(
      'interaction_required',
    );
    expect(errorOf(run(request({ prompt: ['none'] }), { facts: facts({ secondStep: 'enroll' }) }))).toBe(
      'interaction_required',
    );
  });

  it('mfaRequired: the policy, or acr_values / an essential acr that lists no value the sign-in meets, and MFA', () => {
    const none = { acrValues: [] };
    const local = { idp: 'local', amr: ['pwd'] };
    const localMfa = { idp: 'local', amr: ['pwd', 'otp', 'mfa'] };
    const upstream = { idp: 'corp', amr: ['pwd'] };
    expect(mfaRequired(true, local, none)).toBe(true);
    expect(mfaRequired(false, local, none)).toBe(false);
    expect(mfaRequired(false, local, { acrValues: [ACR_MFA] })).toBe(true);
    // A federated sign-in meets neither password nor MFA; a second factor on top of it would not
    // meet password either (users/acr.ts metAcrs), so only a listed MFA asks for one.
    expect(mfaRequired(false, upstream, { acrValues: [ACR_PASSWORD] })).toBe(false);
    expect(mfaRequired(false, upstream, { acrValues: [ACR_PASSWORD, ACR_MFA] })).toBe(true);
    expect(mfaRequired(false, upstream, { acrValues: [ACR_FEDERATED] })).toBe(false);
    // acr_values is a preference list: a met value asks for nothing more.
    expect(mfaRequired(false, local, { acrValues: [ACR_MFA, ACR_PASSWORD] })).toBe(false);
    expect(mfaRequired(false, localMfa, { acrValues: [ACR_MFA] })).toBe(false);
    expect(mfaRequired(false, local, { acrValues: [], essentialAcr: [ACR_MFA] })).toBe(true);
    expect(mfaRequired(false, local, { acrValues: [], essentialAcr: [ACR_PASSWORD, ACR_MFA] })).toBe(false);
  });

  it("an upstream's MFA never answers an essential password acr: a password sign-in at Sigil is needed", () => {
    const upstreamMfa = session({ idp: 'corp', amr: ['hwk', 'mfa'] });
    const decision = run(request({ essentialAcr: [ACR_PASSWORD] }), {
      session: upstreamMfa,
      facts: facts({ upstreams: ['corp'] }),
    });
    expect(decision).not.toMatchObject({ kind: 'issue', acr: ACR_PASSWORD });
    expect(decision).toMatchObject({ kind: 'login' });
    // Its federated class is met, and asserted, when asked for.
    expect(
      run(request({ essentialAcr: [ACR_FEDERATED], acrRequested: true }), {
        session: upstreamMfa,
        facts: facts({ upstreams: ['corp'] }),
      }),
    ).toMatchObject({ kind: 'issue', acr: ACR_FEDERATED });
  });

  it('stepUp and pageOf name the pages', () => {
    expect(stepUp('none', session(), NOW, 300)).toBeUndefined();
    expect(pageOf({ kind: 'second-factor' })).toBe('/account/mfa');
    expect(pageOf({ kind: 'enrol' })).toBe('/account/totp');
    expect(pageOf({ kind: 'login' })).toBe('/account/login');
    expect(pageOf({ kind: 'consent' })).toBe('/consent');
    expect(pageOf({ kind: 'upstream', provider: 'corp' })).toBe('/federation/corp/login');
  });
});

describe('decide: consent (OIDC Core §3.1.2.4)', () => {
  const consenting = client({ requireConsent: true });

  it('only for clients that require it, or prompt=consent', () => {
    expect(run(request())).toEqual(ISSUE);
    expect(run(request({ prompt: ['consent'] }))).toEqual({ kind: 'consent' });
    expect(run(request(), { client: consenting })).toEqual({ kind: 'consent' });
  });

  it('a remembered consent covering every scope skips it, except for a native redirect URI (RFC 8252 §8.6)', () => {
    expect(
      run(request(), { client: consenting, facts: facts({ rememberedConsent: ['profile', 'openid', 'api1'] }) }),
    ).toEqual(ISSUE);
    expect(run(request(), { client: consenting, facts: facts({ rememberedConsent: ['openid'] }) })).toEqual({
      kind: 'consent',
    });
    expect(
      run(request({ prompt: ['consent'] }), {
        client: consenting,
        facts: facts({ rememberedConsent: ['openid', 'profile'] }),
      }),
    ).toEqual({ kind: 'consent' });
    for (const redirectUri of ['http://127.0.0.1:4000/cb', 'com.example.app:/cb'])
      expect(
        run(request({ redirectUri }), {
          client: consenting,
          facts: facts({ rememberedConsent: ['openid', 'profile'] }),
        }),
      ).toEqual({ kind: 'consent' });
  });

  it('prompt=none where consent is needed: consent_required', () => {
    expect(errorOf(run(request({ prompt: ['none'] }), { client: consenting }))).toBe('consent_required');
  });

  it('consent given for this request issues the consented scopes only, even with prompt=consent', () => {
    const given = facts({ pending: { consented: ['openid'] } });
    expect(run(request({ prompt: ['consent'] }), { client: consenting, facts: given })).toEqual({
      kind: 'issue',
      scopes: ['openid'],
    });
    expect(run(request(), { facts: facts({ pending: { consented: [] } }) })).toEqual({ kind: 'issue', scopes: [] });
  });
});

describe('decide: the acr to assert (OIDC Core §3.1.2.1)', () => {
  it('only when asked: the most preferred requested value the sign-in meets, else what it achieved', () => {
    expect(run(request())).toEqual(ISSUE);
    expect(run(request({ acrValues: [ACR_MFA, ACR_PASSWORD] }))).toEqual({ ...ISSUE, acr: ACR_PASSWORD });
    expect(run(request({ acrValues: ['urn:other'] }))).toEqual({ ...ISSUE, acr: ACR_PASSWORD });
    expect(run(request({ acrValues: [ACR_PASSWORD] }), { session: session({ amr: ['pwd', 'otp', 'mfa'] }) })).toEqual({
      ...ISSUE,
      acr: ACR_PASSWORD,
    });
    expect(run(request({ acrValues: [] }), { session: session({ amr: ['pwd', 'otp', 'mfa'] }) })).toEqual({
      ...ISSUE,
      acr: ACR_MFA,
    });
  });

  it('essential values come before acr_values; an upstream acr stands for an upstream sign-in that meets none', () => {
    expect(
      run(request({ acrValues: [ACR_PASSWORD], essentialAcr: [ACR_MFA] }), {
        session: session({ amr: ['pwd', 'otp', 'mfa'] }),
      }),
    ).toEqual({ ...ISSUE, acr: ACR_MFA });
    const upstream = session({ idp: 'corp', amr: ['pwd', 'mfa'], upstreamAcr: 'urn:corp:gold' });
    expect(
      run(request({ acrValues: ['urn:x'] }), { session: upstream, facts: facts({ upstreams: ['corp'] }) }),
    ).toEqual({ ...ISSUE, acr: 'urn:corp:gold' });
  });
});

describe('decide: properties', () => {
  const arbitraries = {
    prompt: fc.subarray(['none', 'login', 'consent', 'select_account']),
    maxAge: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
    session: fc.option(
      fc.record({
        subjectId: fc.constantFrom('1', '2'),
        authTime: fc.integer({ min: NOW - 1000, max: NOW }),
        amr: fc
          .constantFrom(['pwd'], ['pwd', 'otp', 'mfa'], ['external'], ['swk', 'user', 'mfa'])
          .map((amr) => [...amr]),
        idp: fc.constantFrom('local', 'corp', 'other'),
        tenant: fc.constantFrom(null, 'acme'),
      }),
      { nil: undefined },
    ),
    user: fc.option(fc.record({ isActive: fc.boolean() }), { nil: undefined }),
    client: fc.record({
      enableLocalLogin: fc.boolean(),
      identityProviderRestrictions: fc.subarray(['corp', 'other']),
      requireConsent: fc.boolean(),
    }),
    acrValues: fc.subarray([ACR_PASSWORD, ACR_MFA, ACR_FEDERATED, 'urn:other']),
    essentialAcr: fc.option(fc.subarray([ACR_PASSWORD, ACR_MFA, ACR_FEDERATED, 'urn:other'], { minLength: 1 }), {
      nil: undefined,
    }),
    idp: fc.option(fc.constantFrom('corp', 'other', 'nope'), { nil: undefined }),
    facts: fc.record({
      upstreams: fc.subarray(['corp', 'other']),
      secondStep: fc.constantFrom('none', 'verify', 'security-key', 'enroll') as fc.Arbitrary<
        DecisionFacts['secondStep']
      >,
      loginAt: fc.option(fc.integer({ min: NOW - 1000, max: NOW }), { nil: undefined }),
      consented: fc.option(fc.subarray(['openid', 'profile', 'api1']), { nil: undefined }),
      rememberedConsent: fc.option(fc.subarray(['openid', 'profile', 'api1']), { nil: undefined }),
    }),
  };
  const input = fc.record(arbitraries).map((a) => {
    const req = request({
      prompt: a.prompt,
      acrValues: a.acrValues,
      ...(a.maxAge !== undefined ? { maxAge: a.maxAge } : {}),
      ...(a.essentialAcr ? { essentialAcr: a.essentialAcr } : {}),
      ...(a.idp ? { idp: a.idp } : {}),
    });
    const pending =
      a.facts.loginAt !== undefined || a.facts.consented
        ? {
            ...(a.facts.loginAt !== undefined ? { loginAt: a.facts.loginAt } : {}),
            ...(a.facts.consented ? { consented: a.facts.consented } : {}),
          }
        : undefined;
    const f = facts({
      upstreams: a.facts.upstreams,
      secondStep: a.facts.secondStep,
      ...(pending ? { pending } : {}),
      ...(a.facts.rememberedConsent ? { rememberedConsent: a.facts.rememberedConsent } : {}),
    });
    return { req, session: a.session, user: a.user, client: a.client, facts: f };
  });
  type Input = {
    req: DecisionRequest;
    session: DecisionSession | undefined;
    user: { isActive: boolean } | undefined;
    client: DecisionClient;
    facts: DecisionFacts;
  };
  const decideAll = (i: Input) => decide(i.req, i.session, i.user, i.client, i.facts);

  it('prompt=none never shows a page', () => {
    fc.assert(
      fc.property(input, (i) => {
        i.req.prompt.clear();
        i.req.prompt.add('none');
        expect(['issue', 'error']).toContain(decideAll(i).kind);
      }),
    );
  });

  it('nothing is issued without a session of an active user, nor beyond the requested and consented scopes', () => {
    fc.assert(
      fc.property(input, (i) => {
        const d = decideAll(i);
        if (d.kind !== 'issue') return;
        expect(i.session).toBeDefined();
        expect(i.user?.isActive).toBe(true);
        for (const s of d.scopes) {
          expect(i.req.scopes).toContain(s);
          if (i.facts.pending?.consented) expect(i.facts.pending.consented).toContain(s);
        }
      }),
    );
  });

  it('an issued request met every rule: no second step left, an essential acr met, the chosen provider used', () => {
    fc.assert(
      fc.property(input, (i) => {
        const d = decideAll(i);
        if (d.kind !== 'issue' || !i.session) return;
        expect(stepUp(i.facts.secondStep, i.session, NOW, i.facts.freshSignInSeconds)).toBeUndefined();
        if (i.req.acr.idp !== null && i.facts.upstreams.includes(i.req.acr.idp))
          expect(i.session.idp).toBe(i.req.acr.idp);
        if (!i.client.enableLocalLogin) expect(i.session.idp).not.toBe('local');
        if (i.client.requireConsent && !i.facts.pending?.consented) expect(i.facts.rememberedConsent).toBeDefined();
      }),
    );
  });
});
