/**
 * SAML Single Logout (SAML Profiles §4.4) at /saml/slo over HTTP, against a real SQLite store and a
 * real back-channel logout receiver: an SP's LogoutRequest ends the Sigil session (OIDC
 * back-channel logout runs, the session's other SPs are sent LogoutRequests through the browser,
 * the SP gets a signed LogoutResponse), and a logout at Sigil sends LogoutRequests to the session's
 * SPs. Signatures of Sigil's messages are checked by xmlsec1 (HTTP-POST) or node:crypto over the
 * query (HTTP-Redirect). Every refusal (unsigned, wrong Destination, unknown Issuer, another user's
 * NameID, a replayed ID, a LogoutResponse to nothing Sigil sent, a DTD, expired) leaves the
 * victim's session alive.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  Browser,
  idTokensInSession,
  input,
  ISSUER,
  isLoginPage,
  startAuthorizeSigil,
  type Step,
  unescapeHtml,
  webLike,
} from '../authorize-helpers.js';
import type { TestSigil } from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';
import {
  authnRequest,
  element,
  logoutRequest,
  logoutResponse,
  metadataCertificates,
  NS_P,
  postedResponse,
  postForm,
  redirectedMessage,
  redirectPath,
  requestId,
  SP_ACS,
  SP_ENTITY,
  type SpKeys,
  signRequest,
  spKeys,
  spMetadata,
  statusCodes,
  xmlsecVerifies,
} from '../saml-helpers.js';

const SP_SLO = 'https://sp.example/slo';
const POST_SP = 'https://post.example/sp';
const POST_ACS = 'https://post.example/acs';
const POST_SLO = 'https://post.example/slo';
const NO_CERT_SP = 'https://nocert.example/sp';
const NO_CERT_ACS = 'https://nocert.example/acs';
const NO_CERT_SLO = 'https://nocert.example/slo';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';
const SLO = { path: '/saml/slo', field: 'SAMLRequest' } as const;
const SLO_RESPONSE = { path: '/saml/slo', field: 'SAMLResponse' } as const;

let sigil: TestSigil;
let receiver: LogoutReceiver;
let keys: SpKeys;
let stranger: SpKeys;
let idpCert: string;
let dir: string;

beforeAll(async () => {
  keys = await spKeys();
  stranger = await spKeys();
  receiver = await LogoutReceiver.start();
  dir = mkdtempSync(join(tmpdir(), 'sigil-slo-'));
  sigil = await startAuthorizeSigil([webLike('bc', { backChannelLogoutUri: `${receiver.url}/bc` })], {
    backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
    saml: { enabled: true },
    samlServiceProviders: [
      {
        entityId: SP_ENTITY,
        metadataXml: spMetadata(SP_ENTITY, [SP_ACS], keys.certificate, { slo: { url: SP_SLO, binding: 'redirect' } }),
      },
      {
        entityId: POST_SP,
        metadataXml: spMetadata(POST_SP, [POST_ACS], keys.certificate, { slo: { url: POST_SLO, binding: 'post' } }),
      },
      { entityId: NO_CERT_SP, acsUrls: [NO_CERT_ACS], sloUrl: NO_CERT_SLO, nameIdFormat: 'transient' },
    ],
  });
  idpCert = metadataCertificates((await new Browser(sigil).get('/saml/metadata')).body)[0] as string;
});
afterAll(async () => {
  await sigil?.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  receiver.received.length = 0;
});

/** Signs in to `sp` through SSO in browser `b` (as `user`); the NameID and SessionIndex it got. */
async function ssoInto(
  b: Browser,
  sp: string,
  acs: string,
  user = 'alice',
): Promise<{ nameId: string; sessionIndex: string }> {
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER, { issuer: sp, acs }))));
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, user, user));
  const posted = postedResponse(step.body);
  expect(posted.action).toBe(acs);
  return {
    nameId: element(posted.doc, 'NameID')?.textContent ?? '',
    sessionIndex: element(posted.doc, 'AuthnStatement')?.getAttribute('SessionIndex') ?? '',
  };
}

/** Whether `b` is still signed in at Sigil. */
async function signedIn(b: Browser): Promise<boolean> {
  return (await b.get('/account')).status === 200;
}

/** An OIDC client `bc` joins `b`'s session (a code redeemed for tokens). */
async function oidcJoins(b: Browser): Promise<void> {
  await idTokensInSession(sigil, b, ['bc']);
}

/** The SP's LogoutRequest (HTTP-Redirect), signed by `signer` (null: unsigned), sent from browser `b`. */
function sendLogout(b: Browser, shape: Parameters<typeof logoutRequest>[1], signer: SpKeys | null = keys) {
  return b.get(redirectPath(logoutRequest(ISSUER, shape), 'sp-state', signer ?? undefined, SLO));
}

/** Expects the error page of a refused message: 400, nothing sent to an SP. */
function expectRefused(step: Step, reason: RegExp): void {
  expect(step.status, step.body).toBe(400);
  expect(step.location).toBeUndefined();
  expect(step.body).not.toContain('name="SAMLRequest"');
  expect(step.body).not.toContain('name="SAMLResponse"');
  expect(step.body).toMatch(reason);
}

describe('SP-initiated single logout', () => {
  it('ends the Sigil session, tells the OIDC client by back-channel, chains to the other SP, answers the SP', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, SP_ENTITY, SP_ACS);
    await ssoInto(b, POST_SP, POST_ACS);
    await oidcJoins(b);
    const id = requestId();
    const first = await sendLogout(b, {
      id,
      nameId: asserted.nameId,
      format: PERSISTENT,
      spNameQualifier: SP_ENTITY,
      sessionIndex: asserted.sessionIndex,
    });
    // The session has ended and the OIDC client got its logout token before the browser moved on.
    expect(await signedIn(b)).toBe(false);
    expect(receiver.received.map((r) => [r.path, r.sid])).toEqual([['/bc', asserted.sessionIndex]]);
    // The other SP (HTTP-POST binding): a signed LogoutRequest naming its NameID and the session.
    expect(first.status, first.body).toBe(200);
    const toOther = postedResponse(first.body);
    expect(toOther.action).toBe(POST_SLO);
    expect(toOther.doc.documentElement.localName).toBe('LogoutRequest');
    expect(toOther.doc.documentElement.getAttribute('Destination')).toBe(POST_SLO);
    expect(element(toOther.doc, 'SessionIndex', NS_P)?.textContent).toBe(asserted.sessionIndex);
    expect(xmlsecVerifies(dir, toOther.xml, idpCert, 'LogoutRequest')).toBe(true);
    const otherId = toOther.doc.documentElement.getAttribute('ID') ?? '';
    // Its LogoutResponse comes back: Sigil answers the first SP, HTTP-Redirect, signed over the query.
    const answer = signRequest(logoutResponse(ISSUER, { inResponseTo: otherId, issuer: POST_SP }), keys);
    const last = await b.post('/saml/slo', postForm(answer, toOther.relayState, 'SAMLResponse'));
    expect(last.status, last.body).toBe(303);
    const response = redirectedMessage(last.location ?? '');
    expect(response.location).toBe(SP_SLO);
    expect(response.doc.documentElement.localName).toBe('LogoutResponse');
    expect(response.doc.documentElement.getAttribute('InResponseTo')).toBe(id);
    expect(statusCodes(response.doc)).toEqual([SUCCESS]);
    expect(response.relayState).toBe('sp-state');
    expect(response.verifies(idpCert)).toBe(true);
    expect(response.verifies(keys.certificate)).toBe(false);
    // The same LogoutResponse again answers nothing: the chain has moved on.
    expectRefused(await b.post('/saml/slo', postForm(answer, toOther.relayState, 'SAMLResponse')), /in progress/);
  });

  it('by HTTP-POST with an enveloped signature, for a session found by SessionIndex without the cookie', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, SP_ENTITY, SP_ACS);
    // A cross-site POST carries no SameSite=Lax cookie: the SessionIndex names the session.
    const bare = new Browser(sigil);
    const xml = signRequest(
      logoutRequest(ISSUER, { nameId: asserted.nameId, format: PERSISTENT, sessionIndex: asserted.sessionIndex }),
      keys,
    );
    const step = await bare.post('/saml/slo', postForm(xml));
    expect(step.status, step.body).toBe(303);
    expect(statusCodes(redirectedMessage(step.location ?? '').doc)).toEqual([SUCCESS]);
    expect(await signedIn(b)).toBe(false);
  });

  it('answers Success for a session that has ended already, and ends nothing else', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, SP_ENTITY, SP_ACS);
    const shape = { nameId: asserted.nameId, sessionIndex: asserted.sessionIndex };
    expect((await sendLogout(b, shape)).status).toBe(303);
    const again = await sendLogout(new Browser(sigil), shape);
    expect(again.status, again.body).toBe(303);
    expect(statusCodes(redirectedMessage(again.location ?? '').doc)).toEqual([SUCCESS]);
  });
});

describe('IdP-initiated single logout', () => {
  it('a logout at Sigil sends the SP a signed LogoutRequest, and its LogoutResponse leads to the signed-out page', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, SP_ENTITY, SP_ACS);
    const prompt = await b.get('/account/logout');
    const step = await b.post('/account/logout', { csrf_token: input(prompt.body, 'csrf_token') });
    expect(await signedIn(b)).toBe(false);
    // The signed-out page goes on to the SP (a 303 answering the form would meet its CSP form-action).
    expect(step.status, step.body).toBe(200);
    const onward = unescapeHtml(/id="continue" href="([^"]+)"/.exec(step.body)?.[1] ?? '');
    const request = redirectedMessage(onward);
    expect(request.location).toBe(SP_SLO);
    expect(request.verifies(idpCert)).toBe(true);
    const root = request.doc.documentElement;
    expect(root.localName).toBe('LogoutRequest');
    expect(element(request.doc, 'NameID')?.textContent).toBe(asserted.nameId);
    expect(element(request.doc, 'NameID')?.getAttribute('Format')).toBe(PERSISTENT);
    expect(element(request.doc, 'NameID')?.getAttribute('SPNameQualifier')).toBe(SP_ENTITY);
    expect(element(request.doc, 'SessionIndex', NS_P)?.textContent).toBe(asserted.sessionIndex);
    expect(Date.parse(root.getAttribute('NotOnOrAfter') ?? '')).toBeGreaterThan(Date.now());
    // A response to another request ID is refused; the right one ends on the signed-out page.
    const wrong = logoutResponse(ISSUER, { inResponseTo: requestId() });
    expectRefused(await b.get(redirectPath(wrong, request.relayState, keys, SLO_RESPONSE)), /in progress/);
    const right = logoutResponse(ISSUER, { inResponseTo: root.getAttribute('ID') ?? '' });
    const unsigned = await b.get(redirectPath(right, request.relayState, undefined, SLO_RESPONSE));
    expectRefused(unsigned, /must sign/);
    const done = await b.get(redirectPath(right, request.relayState, keys, SLO_RESPONSE));
    expect(done.status, done.body).toBe(200);
    expect(done.body).not.toContain('SAMLRequest');
  });
});

describe('an SP without a signing certificate', () => {
  it('is logged out by Sigil (its unsigned LogoutResponse answers the request) but cannot log out at Sigil', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, NO_CERT_SP, NO_CERT_ACS);
    expectRefused(
      await b.get(
        redirectPath(logoutRequest(ISSUER, { issuer: NO_CERT_SP, nameId: asserted.nameId }), undefined, undefined, SLO),
      ),
      /must sign/,
    );
    expect(await signedIn(b)).toBe(true);
    const prompt = await b.get('/account/logout');
    const step = await b.post('/account/logout', { csrf_token: input(prompt.body, 'csrf_token') });
    const request = redirectedMessage(unescapeHtml(/id="continue" href="([^"]+)"/.exec(step.body)?.[1] ?? ''));
    expect(request.location).toBe(NO_CERT_SLO);
    expect(element(request.doc, 'NameID')?.textContent).toBe(asserted.nameId);
    const inResponseTo = request.doc.documentElement.getAttribute('ID') ?? '';
    const answer = logoutResponse(ISSUER, { inResponseTo, issuer: NO_CERT_SP });
    const done = await b.get(redirectPath(answer, request.relayState, undefined, SLO_RESPONSE));
    expect(done.status, done.body).toBe(200);
    // Once only.
    expectRefused(await b.get(redirectPath(answer, request.relayState, undefined, SLO_RESPONSE)), /in progress/);
  });
});

describe('refused logout requests leave the victim signed in', () => {
  it('unsigned, signed by another key, wrong Destination, unknown Issuer, DTD, expired', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, SP_ENTITY, SP_ACS);
    const shape = { nameId: asserted.nameId, sessionIndex: asserted.sessionIndex };
    expectRefused(await sendLogout(b, shape, null), /must sign/);
    expectRefused(await b.post('/saml/slo', postForm(logoutRequest(ISSUER, shape))), /must sign/);
    expectRefused(await sendLogout(b, shape, stranger), /does not verify/);
    expectRefused(await sendLogout(b, { ...shape, destination: `${ISSUER}/saml/sso` }), /destination/);
    expectRefused(await sendLogout(b, { ...shape, destination: null }), /destination/);
    expectRefused(await sendLogout(b, { ...shape, issuer: 'https://unknown.example/sp' }), /not registered/);
    const dtd = `<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${logoutRequest(ISSUER, shape)}`;
    expectRefused(await b.get(redirectPath(dtd, undefined, keys, SLO)), /DTD/);
    const past = new Date(Date.now() - 600_000).toISOString();
    expectRefused(await sendLogout(b, { ...shape, notOnOrAfter: past }), /expired/);
    expectRefused(await b.get('/saml/slo'), /SAMLRequest or a SAMLResponse/);
    expect(await signedIn(b)).toBe(true);
  });

  it("another user's NameID ends nothing, with or without the victim's SessionIndex", async () => {
    const victim = new Browser(sigil);
    const attacker = new Browser(sigil);
    const theirs = await ssoInto(victim, SP_ENTITY, SP_ACS, 'alice');
    const mine = await ssoInto(attacker, SP_ENTITY, SP_ACS, 'bob');
    const withIndex = await sendLogout(victim, { nameId: mine.nameId, sessionIndex: theirs.sessionIndex });
    expect(withIndex.status).toBe(303);
    const withoutIndex = await sendLogout(victim, { nameId: mine.nameId });
    expect(withoutIndex.status).toBe(303);
    expect(await signedIn(victim)).toBe(true);
    expect(await signedIn(attacker)).toBe(true);
    expect(receiver.received).toEqual([]);
  });

  it('a replayed request ID is refused', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, SP_ENTITY, SP_ACS);
    const id = requestId();
    const path = redirectPath(logoutRequest(ISSUER, { id, nameId: 'nobody' }), undefined, keys, SLO);
    expect((await b.get(path)).status).toBe(303);
    expectRefused(await b.get(path), /used before/);
    expectRefused(
      await sendLogout(b, { id, nameId: asserted.nameId, sessionIndex: asserted.sessionIndex }),
      /used before/,
    );
    expect(await signedIn(b)).toBe(true);
  });

  it('a LogoutResponse to a request Sigil never sent is refused', async () => {
    const b = new Browser(sigil);
    await ssoInto(b, SP_ENTITY, SP_ACS);
    const forged = logoutResponse(ISSUER, { inResponseTo: requestId() });
    expectRefused(await b.get(redirectPath(forged, 'made-up', keys, SLO_RESPONSE)), /in progress/);
    expectRefused(await b.get(redirectPath(forged, undefined, keys, SLO_RESPONSE)), /in progress/);
    expect(await signedIn(b)).toBe(true);
  });
});
