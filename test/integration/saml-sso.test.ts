/**
 * The SAML 2.0 identity provider over HTTP (/saml/metadata, /saml/sso, /saml/initiate) against a
 * real SQLite store: SP-initiated sign-in in both bindings, IdP-initiated sign-in, the pages and
 * the session shared with OpenID Connect, NameIDs and attributes, signatures checked by xmlsec1,
 * and every refusal next to a control request of the same shape that succeeds. A refusal ends on
 * Sigil's error page (400) and posts nothing to any ACS.
 */
import { deflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeClients,
  Browser,
  codeParams,
  isConsentPage,
  isLoginPage,
  pkce,
  type Step,
} from '../authorize-helpers.js';
import { startSigil, type TestSigil } from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';
import {
  attributes,
  authnRequest,
  element,
  idOf,
  metadataCertificates,
  NS_P,
  postedResponse,
  postForm,
  redirectPath,
  requestId,
  SP_ACS,
  SP_ACS2,
  SP_ENTITY,
  type SpKeys,
  signRequest,
  spKeys,
  spMetadata,
  statusCodes,
  xmlsecVerifies,
} from '../saml-helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const SIGNED_SP = 'https://signed.example/sp';
const SIGNED_ACS = 'https://signed.example/acs';
const OTHER_SP = 'https://other.example/sp';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';

let sigil: TestSigil;
let keys: SpKeys;
let stranger: SpKeys;

beforeAll(async () => {
  keys = await spKeys();
  stranger = await spKeys();
  sigil = await startSigil({
    clients: authorizeClients(),
    saml: { enabled: true },
    samlServiceProviders: [
      {
        entityId: SP_ENTITY,
        metadataXml: spMetadata(SP_ENTITY, [SP_ACS, SP_ACS2], keys.certificate),
        attributes: { mail: 'email', role: 'role', displayName: 'name' },
      },
      {
        entityId: SIGNED_SP,
        metadataXml: spMetadata(SIGNED_SP, [SIGNED_ACS], keys.certificate),
        requireSignedAuthnRequests: true,
        nameIdFormat: 'emailAddress',
      },
      { entityId: OTHER_SP, acsUrls: ['https://other.example/acs'], nameIdFormat: 'transient', requireConsent: true },
    ],
  });
});
afterAll(async () => sigil?.close());

/** Runs a request to its posted answer, signing in as `user` when the login page comes. */
async function signInThrough(b: Browser, first: Step, user = 'alice'): Promise<Step> {
  let step = await b.follow(first);
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, user, user));
  return step;
}

/** Expects the error page of a refused request: 400, no form posting anywhere. */
function expectRefused(step: Step, reason: RegExp): void {
  expect(step.status, step.body).toBe(400);
  expect(step.body).not.toContain('SAMLResponse');
  expect(step.body).toMatch(reason);
}

describe('metadata', () => {
  it('names the issuer, the SSO and SLO endpoints in both bindings, the NameID formats and the signing certificate', async () => {
    const res = await new Browser(sigil).get('/saml/metadata');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('application/samlmetadata+xml');
    expect(res.body).toContain(`entityID="${ISSUER}"`);
    expect(res.body).toContain('protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"');
    for (const binding of ['HTTP-Redirect', 'HTTP-POST']) {
      expect(res.body).toContain(
        `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:${binding}" Location="${ISSUER}/saml/sso"/>`,
      );
      expect(res.body).toContain(
        `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:${binding}" Location="${ISSUER}/saml/slo"/>`,
      );
    }
    expect(res.body).toContain('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    expect(res.body).toContain('<md:KeyDescriptor use="signing">');
    expect(metadataCertificates(res.body)).toHaveLength(1);
  });

  it('publishes the next certificate before it signs, and the JWKS never carries the SAML key', async () => {
    const b = new Browser(sigil);
    const before = metadataCertificates((await b.get('/saml/metadata')).body);
    const added = await sigil.context.management.keys.rotate('saml-rsa');
    await sigil.context.management.reloadKeys();
    const after = metadataCertificates((await b.get('/saml/metadata')).body);
    expect(added).toHaveLength(1);
    expect(after).toHaveLength(2);
    expect(after).toEqual(expect.arrayContaining(before));
    // Responses are still signed with the key signing before the rotation (the new one is pending).
    const step = await signInThrough(b, await b.get(redirectPath(authnRequest(ISSUER))));
    const { xml } = postedResponse(step.body);
    expect(xmlsecVerifies(sigil.dir, xml, before[0] as string, 'Response')).toBe(true);
    const jwks = JSON.parse((await b.get('/.well-known/openid-configuration/jwks')).body) as {
      keys: { alg: string }[];
    };
    expect(jwks.keys.map((k) => k.alg)).not.toContain('saml-rsa');
  });
});

describe('SP-initiated sign-in', () => {
  it('HTTP-Redirect: login page, then a signed Response and Assertion posted to the ACS with RelayState', async () => {
    const b = new Browser(sigil);
    const xml = authnRequest(ISSUER);
    const step = await signInThrough(b, await b.get(redirectPath(xml, 'back-to/page?x=1')));
    const posted = postedResponse(step.body);
    expect(posted.action).toBe(SP_ACS);
    expect(posted.relayState).toBe('back-to/page?x=1');
    expect(step.headers['content-security-policy']).toContain('form-action https://sp.example');
    const response = posted.doc.documentElement;
    expect(response.getAttribute('InResponseTo')).toBe(idOf(xml));
    expect(response.getAttribute('Destination')).toBe(SP_ACS);
    expect(statusCodes(posted.doc)).toEqual([SUCCESS]);
    const confirmation = element(posted.doc, 'SubjectConfirmationData');
    expect(confirmation?.getAttribute('Recipient')).toBe(SP_ACS);
    expect(confirmation?.getAttribute('InResponseTo')).toBe(idOf(xml));
    expect(element(posted.doc, 'Audience')?.textContent).toBe(SP_ENTITY);
    expect(element(posted.doc, 'AuthnContextClassRef')?.textContent).toBe(
      'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
    );
    expect(element(posted.doc, 'AuthnStatement')?.getAttribute('SessionIndex')).toMatch(/^[\w-]+$/);
    expect(attributes(posted.doc)).toEqual({
      mail: ['alice@example.com'],
      role: ['admin'],
      displayName: ['Alice Smith'],
    });
    // An SP trusts every signing certificate of the metadata (an earlier test published a next one).
    const certificates = metadataCertificates((await b.get('/saml/metadata')).body);
    const verifiedBy = (xml: string, node: 'Response' | 'Assertion') =>
      certificates.filter((c) => xmlsecVerifies(sigil.dir, xml, c, node)).length;
    expect(verifiedBy(posted.xml, 'Response')).toBe(1);
    expect(verifiedBy(posted.xml, 'Assertion')).toBe(1);
    // The same Response with a changed attribute verifies no more.
    const tampered = posted.xml.replace('alice@example.com', 'mallory@example.com');
    expect(verifiedBy(tampered, 'Assertion')).toBe(0);
  });

  it('HTTP-POST: a signed request is answered at the ACS it names', async () => {
    const b = new Browser(sigil);
    const xml = signRequest(authnRequest(ISSUER, { issuer: SIGNED_SP, acs: SIGNED_ACS }), keys);
    const step = await signInThrough(b, await b.post('/saml/sso', postForm(xml, 'rs')));
    const posted = postedResponse(step.body);
    expect(posted.action).toBe(SIGNED_ACS);
    expect(posted.relayState).toBe('rs');
    // emailAddress: the email claim.
    expect(element(posted.doc, 'NameID')?.textContent).toBe('alice@example.com');
  });

  it('a persistent NameID is opaque and the same at every sign-in to an SP; transient changes', async () => {
    const nameIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const b = new Browser(sigil);
      const step = await signInThrough(b, await b.get(redirectPath(authnRequest(ISSUER))));
      nameIds.push(element(postedResponse(step.body).doc, 'NameID')?.textContent ?? '');
    }
    expect(nameIds[0]).toBe(nameIds[1]);
    expect(nameIds[0]).not.toContain('alice');
    expect(nameIds[0]).not.toBe('1');
    const b = new Browser(sigil);
    const first = await signInThrough(b, await b.get('/saml/initiate?sp=https%3A%2F%2Fother.example%2Fsp'));
    const consented = await b.consent(first, 'yes');
    const transient = element(postedResponse(consented.body).doc, 'NameID');
    expect(transient?.getAttribute('Format')).toBe('urn:oasis:names:tc:SAML:2.0:nameid-format:transient');
    expect(transient?.textContent).not.toBe(nameIds[0]);
  });

  it('AssertionConsumerServiceIndex names a registered ACS of the metadata', async () => {
    const b = new Browser(sigil);
    const step = await signInThrough(b, await b.get(redirectPath(authnRequest(ISSUER, { acsIndex: 1 }))));
    expect(postedResponse(step.body).action).toBe(SP_ACS2);
    const none = await b.get(redirectPath(authnRequest(ISSUER, { acsIndex: 7 })));
    expectRefused(none, /index is not registered/);
  });
});

describe('sessions and pages shared with OpenID Connect', () => {
  it('an OpenID sign-in followed by a SAML one asks no password, and a SAML one followed by an OpenID one neither', async () => {
    const b = new Browser(sigil);
    const oidc = await b.authorize(codeParams(pkce().challenge), { user: 'bob' });
    expect(oidc.status).toBe(303);
    expect(oidc.location).toContain('code=');
    const saml = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
    expect(isLoginPage(saml)).toBe(false);
    expect(attributes(postedResponse(saml.body).doc).role).toEqual(['user', 'dev']);

    const c = new Browser(sigil);
    await signInThrough(c, await c.get(redirectPath(authnRequest(ISSUER))));
    const after = await c.follow(
      await c.get(`/connect/authorize?${new URLSearchParams(codeParams(pkce().challenge))}`),
    );
    expect(isLoginPage(after)).toBe(false);
    expect(after.location).toContain('code=');
  });

  it('a user with TOTP gets the code step, and the assertion names the MFA context', async () => {
    const enrol = new Browser(sigil);
    await enrol.signIn('bob');
    const { secret } = await enrollTotp(enrol);
    const b = new Browser(sigil);
    let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
    step = await b.follow(await b.submitLogin(step, 'bob', 'bob'));
    expect(isMfaPage(step), step.body).toBe(true);
    step = await submitCode(b, step, totpCode(secret, 1));
    const posted = postedResponse(step.body);
    expect(statusCodes(posted.doc)).toEqual([SUCCESS]);
    expect(element(posted.doc, 'AuthnContextClassRef')?.textContent).toBe('https://refeds.org/profile/mfa');
  });

  it('ForceAuthn asks for the password again; without it the session answers at once', async () => {
    const b = new Browser(sigil);
    await signInThrough(b, await b.get(redirectPath(authnRequest(ISSUER))));
    const again = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
    expect(statusCodes(postedResponse(again.body).doc)).toEqual([SUCCESS]);
    const forced = await b.follow(await b.get(redirectPath(authnRequest(ISSUER, { forceAuthn: true }))));
    expect(isLoginPage(forced)).toBe(true);
    const done = await b.follow(await b.submitLogin(forced, 'alice', 'alice'));
    expect(statusCodes(postedResponse(done.body).doc)).toEqual([SUCCESS]);
  });

  it('IsPassive without a session answers NoPassive at once; with one, Success', async () => {
    const b = new Browser(sigil);
    const passive = await b.get(redirectPath(authnRequest(ISSUER, { isPassive: true })));
    const refused = postedResponse(passive.body);
    expect(statusCodes(refused.doc)).toEqual([
      'urn:oasis:names:tc:SAML:2.0:status:Responder',
      'urn:oasis:names:tc:SAML:2.0:status:NoPassive',
    ]);
    expect(element(refused.doc, 'Assertion')).toBeUndefined();
    await signInThrough(b, await b.get(redirectPath(authnRequest(ISSUER))));
    const control = await b.get(redirectPath(authnRequest(ISSUER, { isPassive: true })));
    expect(statusCodes(postedResponse(control.body).doc)).toEqual([SUCCESS]);
  });

  it('cancel on the login page answers RequestDenied to the ACS; declined consent too', async () => {
    const b = new Browser(sigil);
    const login = await b.follow(await b.get(redirectPath(authnRequest(ISSUER))));
    const cancelled = await b.follow(await b.submitLogin(login, '', '', { button: 'cancel' }));
    expect(statusCodes(postedResponse(cancelled.body).doc)).toEqual([
      'urn:oasis:names:tc:SAML:2.0:status:Responder',
      'urn:oasis:names:tc:SAML:2.0:status:RequestDenied',
    ]);
    const c = new Browser(sigil);
    const consent = await signInThrough(c, await c.get('/saml/initiate?sp=https%3A%2F%2Fother.example%2Fsp'));
    expect(isConsentPage(consent), consent.body).toBe(true);
    const declined = await c.consent(consent, 'no');
    expect(statusCodes(postedResponse(declined.body).doc)[1]).toBe('urn:oasis:names:tc:SAML:2.0:status:RequestDenied');
  });

  it('a NameIDPolicy format the SP is not given is answered InvalidNameIDPolicy; its own format succeeds', async () => {
    const b = new Browser(sigil);
    const wrong = await b.get(
      redirectPath(authnRequest(ISSUER, { nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' })),
    );
    expect(statusCodes(postedResponse(wrong.body).doc)[1]).toBe(
      'urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy',
    );
    const right = await signInThrough(
      b,
      await b.get(
        redirectPath(authnRequest(ISSUER, { nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' })),
      ),
    );
    expect(statusCodes(postedResponse(right.body).doc)).toEqual([SUCCESS]);
  });
});

describe('IdP-initiated sign-in', () => {
  it('answers a registered SP at its first ACS without InResponseTo; an unknown SP is refused', async () => {
    const b = new Browser(sigil);
    const step = await signInThrough(
      b,
      await b.get(`/saml/initiate?sp=${encodeURIComponent(SP_ENTITY)}&RelayState=home`),
    );
    const posted = postedResponse(step.body);
    expect(posted.action).toBe(SP_ACS);
    expect(posted.relayState).toBe('home');
    expect(posted.doc.documentElement.hasAttribute('InResponseTo')).toBe(false);
    expect(element(posted.doc, 'SubjectConfirmationData')?.hasAttribute('InResponseTo')).toBe(false);
    expectRefused(await b.get('/saml/initiate?sp=https%3A%2F%2Funknown.example'), /not registered/);
    expectRefused(
      await b.get(`/saml/initiate?sp=${encodeURIComponent(SP_ENTITY)}&RelayState=${'r'.repeat(81)}`),
      /80 bytes/,
    );
  });
});

describe('refusals, each next to a control of the same shape', () => {
  it('an unknown SP (Issuer)', async () => {
    const b = new Browser(sigil);
    expectRefused(
      await b.get(redirectPath(authnRequest(ISSUER, { issuer: 'https://unknown.example/sp' }))),
      /not registered/,
    );
    expect((await b.get(redirectPath(authnRequest(ISSUER)))).status).toBe(303);
  });

  it('an ACS URL not registered, by a single character', async () => {
    const b = new Browser(sigil);
    expectRefused(await b.get(redirectPath(authnRequest(ISSUER, { acs: `${SP_ACS}/` }))), /not registered/);
    expectRefused(
      await b.get(redirectPath(authnRequest(ISSUER, { acs: 'https://evil.example/acs' }))),
      /not registered/,
    );
    expect((await b.get(redirectPath(authnRequest(ISSUER, { acs: SP_ACS2 })))).status).toBe(303);
  });

  it('a wrong Destination, and a signed request without one', async () => {
    const b = new Browser(sigil);
    expectRefused(
      await b.get(redirectPath(authnRequest(ISSUER, { destination: 'https://idp.example/saml/sso' }))),
      /destination/,
    );
    const unsigned = signRequest(authnRequest(ISSUER, { issuer: SIGNED_SP, acs: SIGNED_ACS, destination: null }), keys);
    expectRefused(await b.post('/saml/sso', postForm(unsigned)), /destination/);
    expect((await b.get(redirectPath(authnRequest(ISSUER, { destination: `${ISSUER}/saml/sso` })))).status).toBe(303);
  });

  it('a replayed request ID', async () => {
    const b = new Browser(sigil);
    const xml = authnRequest(ISSUER);
    expect((await b.get(redirectPath(xml))).status).toBe(303);
    expectRefused(await b.get(redirectPath(xml)), /used before/);
    // The same ID from another SP is another request.
    const other = authnRequest(ISSUER, { id: idOf(xml), issuer: SIGNED_SP, acs: SIGNED_ACS });
    expect((await b.get(redirectPath(other, undefined, keys))).status).toBe(303);
  });

  it('a refused request stores nothing: its ID is still good afterwards', async () => {
    const b = new Browser(sigil);
    const id = requestId();
    expectRefused(
      await b.get(redirectPath(authnRequest(ISSUER, { id, acs: 'https://evil.example/acs' }))),
      /not registered/,
    );
    expect((await b.get(redirectPath(authnRequest(ISSUER, { id })))).status).toBe(303);
  });

  it('a request that is not fresh', async () => {
    const b = new Browser(sigil);
    const old = new Date(Date.now() - 3600_000).toISOString();
    expectRefused(await b.get(redirectPath(authnRequest(ISSUER, { issueInstant: old }))), /not fresh/);
  });

  it('a DTD, an internal entity and an external entity (XXE)', async () => {
    const b = new Browser(sigil);
    const xml = authnRequest(ISSUER);
    expectRefused(await b.get(redirectPath(`<!DOCTYPE x [<!ENTITY e "y">]>${xml}`)), /DTD/);
    const xxe = `<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${authnRequest(ISSUER).replace(
      `<saml:Issuer>${SP_ENTITY}`,
      `<saml:Issuer>${SP_ENTITY}&x;`,
    )}`;
    expectRefused(await b.post('/saml/sso', postForm(xxe)), /DTD/);
    expectRefused(
      await b.post('/saml/sso', postForm(authnRequest(ISSUER).replace(SP_ENTITY, `${SP_ENTITY}&x;`))),
      /well-formed/,
    );
    expect((await b.post('/saml/sso', postForm(authnRequest(ISSUER)))).status).toBe(303);
  });

  it('oversized input: the encoded request and the inflated one (a DEFLATE bomb)', async () => {
    const b = new Browser(sigil);
    const bomb = deflateRawSync(
      Buffer.from(
        authnRequest(ISSUER).replace('</samlp:AuthnRequest>', `${' '.repeat(2_000_000)}</samlp:AuthnRequest>`),
      ),
    );
    expectRefused(await b.get(`/saml/sso?SAMLRequest=${encodeURIComponent(bomb.toString('base64'))}`), /too large/);
    const big = `${'A'.repeat(70_000)}`;
    expectRefused(await b.get(`/saml/sso?SAMLRequest=${big}`), /too large/);
    expect((await b.get(redirectPath(authnRequest(ISSUER)))).status).toBe(303);
  });

  it('an unsigned request where signing is required (both bindings), and one signed with another key', async () => {
    const b = new Browser(sigil);
    const shape = { issuer: SIGNED_SP, acs: SIGNED_ACS };
    expectRefused(await b.get(redirectPath(authnRequest(ISSUER, shape))), /must sign/);
    expectRefused(await b.post('/saml/sso', postForm(authnRequest(ISSUER, shape))), /must sign/);
    expectRefused(await b.get(redirectPath(authnRequest(ISSUER, shape), undefined, stranger)), /does not verify/);
    expectRefused(
      await b.post('/saml/sso', postForm(signRequest(authnRequest(ISSUER, shape), stranger))),
      /does not verify/,
    );
    expect((await b.get(redirectPath(authnRequest(ISSUER, shape), 'r', keys))).status).toBe(303);
    expect((await b.post('/saml/sso', postForm(signRequest(authnRequest(ISSUER, shape), keys)))).status).toBe(303);
  });

  it('a redirect signature over other octets (RelayState changed after signing)', async () => {
    const b = new Browser(sigil);
    const path = redirectPath(authnRequest(ISSUER, { issuer: SIGNED_SP, acs: SIGNED_ACS }), 'good', keys);
    expectRefused(await b.get(path.replace('RelayState=good', 'RelayState=evil')), /does not verify/);
    expect((await b.get(path)).status).toBe(303);
  });

  it('signature wrapping: a validly signed request moved under an attacker-made root', async () => {
    const b = new Browser(sigil);
    const signed = signRequest(authnRequest(ISSUER, { issuer: SIGNED_SP, acs: SIGNED_ACS }), keys);
    const open = (id: string, acs: string) =>
      `<samlp:AuthnRequest xmlns:samlp="${NS_P}" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${ISSUER}/saml/sso" AssertionConsumerServiceURL="${acs}"><saml:Issuer>${SIGNED_SP}</saml:Issuer>`;
    // 1. The signed request as a child of the attacker's root.
    const wrapped = `${open(requestId(), SIGNED_ACS)}${signed}</samlp:AuthnRequest>`;
    expectRefused(await b.post('/saml/sso', postForm(wrapped)), /not the message|must sign/);
    // 2. The signed request in Extensions, its Signature moved up to the attacker's root, which takes its ID too.
    const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(signed)?.[0] ?? '';
    const inner = signed.replace(signature, '');
    const id = idOf(signed);
    const moved = `${open(id, SIGNED_ACS)}${signature}<samlp:Extensions>${inner}</samlp:Extensions></samlp:AuthnRequest>`;
    expectRefused(await b.post('/saml/sso', postForm(moved)), /unique ID|does not verify/);
    // 3. The same, the attacker's root with another ID: the signature references an element that is not the root.
    const other = `${open(requestId(), SIGNED_ACS)}${signature}<samlp:Extensions>${inner}</samlp:Extensions></samlp:AuthnRequest>`;
    expectRefused(await b.post('/saml/sso', postForm(other)), /does not reference/);
    // The control: the signed request as it was signed.
    expect((await b.post('/saml/sso', postForm(signed))).status).toBe(303);
  });

  it('a second root element, and a request signed in the XML sent over HTTP-Redirect', async () => {
    const b = new Browser(sigil);
    const xml = authnRequest(ISSUER);
    expectRefused(await b.post('/saml/sso', postForm(`${xml}${authnRequest(ISSUER)}`)), /well-formed|one root/);
    const signedInXml = signRequest(authnRequest(ISSUER, { issuer: SIGNED_SP, acs: SIGNED_ACS }), keys);
    expectRefused(await b.get(redirectPath(signedInXml)), /in the query/);
    expect((await b.post('/saml/sso', postForm(xml))).status).toBe(303);
  });

  it("requests beyond the quota (the address's, a signed-in user's own): 429 with Retry-After, before the ID is stored", async () => {
    const limited = await startSigil({
      saml: { enabled: true },
      samlServiceProviders: [{ entityId: SP_ENTITY, metadataXml: spMetadata(SP_ENTITY, [SP_ACS]) }],
      pendingLimits: { windowSeconds: 600, interactionsPerBrowser: 30, interactionsPerAddress: 2 },
    });
    try {
      const b = new Browser(limited);
      for (let i = 0; i < 2; i++) expect((await b.get(redirectPath(authnRequest(ISSUER)))).status).toBe(303);
      const over = await b.get(redirectPath(authnRequest(ISSUER)));
      expect(over.status).toBe(429);
      expect(over.headers['retry-after']).toBeDefined();
      expect(over.body).not.toContain('SAMLResponse');
      // A signed-in browser at the same address counts against its user's quota, not the
      // address's: one person there does not use up the others' single sign-on.
      for (const user of ['alice', 'bob']) {
        const signedIn = new Browser(limited);
        await signedIn.signIn(user);
        for (let i = 0; i < 2; i++) {
          const answered = await signedIn.get(redirectPath(authnRequest(ISSUER)));
          expect(answered.status, answered.body).toBe(200);
          expect(answered.body).toContain('SAMLResponse');
        }
        expect((await signedIn.get(redirectPath(authnRequest(ISSUER)))).status).toBe(429);
      }
    } finally {
      await limited.close();
    }
  });

  it('SAML is served only when enabled', async () => {
    const off = await startSigil({});
    try {
      expect((await new Browser(off).get('/saml/metadata')).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
