/**
 * SAML single logout over SOAP (SAML Bindings §3.2, Profiles §4.4.3.3): a session ended without its
 * browser (here by an administrator through /admin/v1) sends each of its SAML SPs that has a SOAP
 * SingleLogoutService a signed LogoutRequest from the back-channel outbox, to a real HTTP server of
 * the test; the request's signature is checked by xmlsec1. The SP's answer must be a LogoutResponse
 * signed by it: an unsigned or oversize answer is recorded as a failure (in the log), an endpoint
 * the SSRF guard refuses is not contacted, an SP without a SOAP endpoint is skipped and logged;
 * none of them is a crash. Sessions the command line ends are told by the running node's deliverer.
 * A logout in the browser sends an SP with a front-channel endpoint its
 * LogoutRequest through the browser, not over SOAP.
 */
import { DOMParser } from '@xmldom/xmldom';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionAdmin } from '../../src/admin/sessions.js';
import { Browser, input, ISSUER, isLoginPage } from '../authorize-helpers.js';
import { clientTokens, settled, startSigil, testConfig, type TestSigil } from '../helpers.js';
import {
  authnRequest,
  element,
  logoutResponse,
  metadataCertificates,
  NS_P,
  postedResponse,
  redirectPath,
  type SpKeys,
  signRequest,
  spKeys,
  spMetadata,
  xmlsecVerifies,
} from '../saml-helpers.js';

const GOOD = 'https://good.example/sp';
const UNSIGNED = 'https://unsigned.example/sp';
const BIG = 'https://big.example/sp';
const PRIVATE = 'https://private.example/sp';
const NO_SOAP = 'https://nosoap.example/sp';
const FORGED = 'https://forged.example/sp';
const SOAP_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';

/** What the SOAP endpoint got: the path and the body. */
const received: { path: string; body: string }[] = [];
const logs: Record<string, unknown>[] = [];
let soap: Server;
let soapUrl: string;
let sigil: TestSigil;
let keys: SpKeys;
let stranger: SpKeys;
let idpCert: string;
let admin: string;
let dir: string;

/** The SP's answer in a SOAP envelope: a LogoutResponse to `requestId` from `issuer`, signed by `signer` (none: unsigned). */
function soapAnswer(requestId: string, issuer: string, signer: SpKeys | undefined): string {
  const response = logoutResponse(ISSUER, { inResponseTo: requestId, issuer });
  const message = signer ? signRequest(response, signer) : response;
  return `<SOAP-ENV:Envelope xmlns:SOAP-ENV="${SOAP_ENV}"><SOAP-ENV:Body>${message}</SOAP-ENV:Body></SOAP-ENV:Envelope>`;
}

beforeAll(async () => {
  keys = await spKeys();
  stranger = await spKeys();
  dir = mkdtempSync(join(tmpdir(), 'sigil-soap-'));
  soap = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      const id = /<samlp:LogoutRequest[^>]* ID="([^"]+)"/.exec(body)?.[1] ?? '';
      res.setHeader('content-type', 'text/xml');
      if (req.url === '/good') res.end(soapAnswer(id, GOOD, keys));
      else if (req.url === '/unsigned') res.end(soapAnswer(id, UNSIGNED, undefined));
      else if (req.url === '/forged') res.end(soapAnswer(id, FORGED, stranger));
      else res.end(`<x>${'a'.repeat(200 * 1024)}</x>`);
    });
  });
  await new Promise<void>((ok) => soap.listen(0, '127.0.0.1', ok));
  soapUrl = `http://127.0.0.1:${(soap.address() as AddressInfo).port}`;
  const sp = (entityId: string, extra: Parameters<typeof spMetadata>[3]) => ({
    entityId,
    metadataXml: spMetadata(entityId, [`${entityId}/acs`], keys.certificate, extra),
  });
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  sigil = await startSigil(
    {
      clients: [
        ...testConfig().clients!,
        {
          clientId: 'automation',
          clientSecrets: ['automation-secret'],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['sigil:admin'],
        },
      ],
      // The test's SOAP endpoint is on loopback (plain http is allowed there, and only there).
      clientIdMetadataDocuments: { allowLoopback: true },
      backChannelLogout: { pollSeconds: 1, timeoutSeconds: 2, retrySeconds: 60 },
      saml: { enabled: true },
      samlServiceProviders: [
        sp(GOOD, { soapSlo: `${soapUrl}/good`, slo: { url: `${GOOD}/slo`, binding: 'redirect' } }),
        sp(UNSIGNED, { soapSlo: `${soapUrl}/unsigned` }),
        sp(BIG, { soapSlo: `${soapUrl}/big` }),
        sp(FORGED, { soapSlo: `${soapUrl}/forged` }),
        // TEST-NET-1 (RFC 5737): a special-use address the SSRF guard never lets a request reach.
        sp(PRIVATE, { soapSlo: 'https://192.0.2.10/soap' }),
        sp(NO_SOAP, { slo: { url: `${NO_SOAP}/slo`, binding: 'redirect' } }),
      ],
    },
    { logger },
  );
  idpCert = metadataCertificates((await new Browser(sigil).get('/saml/metadata')).body)[0] as string;
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
});
afterAll(async () => {
  await sigil?.close();
  await new Promise((ok) => soap?.close(ok));
  rmSync(dir, { recursive: true, force: true });
});

/** Signs in to `sp` through SSO in browser `b`; the NameID and SessionIndex it got. */
async function ssoInto(b: Browser, sp: string): Promise<{ nameId: string; sessionIndex: string }> {
  let step = await b.follow(await b.get(redirectPath(authnRequest(ISSUER, { issuer: sp, acs: `${sp}/acs` }))));
  if (isLoginPage(step)) step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
  const posted = postedResponse(step.body);
  expect(posted.action).toBe(`${sp}/acs`);
  return {
    nameId: element(posted.doc, 'NameID')?.textContent ?? '',
    sessionIndex: element(posted.doc, 'AuthnStatement')?.getAttribute('SessionIndex') ?? '',
  };
}

/** The log lines about `entityId`'s logout of session `sid`. */
function logsOf(entityId: string, sid: string): Record<string, unknown>[] {
  return logs.filter((l) => l.entityId === entityId && l.sid === sid);
}

describe('SAML single logout over SOAP', () => {
  it('an administrator ends the session: each SP with a SOAP endpoint is sent a signed LogoutRequest; refused answers are recorded', async () => {
    const b = new Browser(sigil);
    const asserted = await ssoInto(b, GOOD);
    for (const sp of [UNSIGNED, BIG, FORGED, PRIVATE, NO_SOAP]) await ssoInto(b, sp);
    const sid = asserted.sessionIndex;
    const ended = await sigil.app.inject({
      method: 'DELETE',
      url: `/admin/v1/users/1/sessions/${sid}`,
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(ended.statusCode, ended.body).toBe(204);
    expect((await b.get('/account')).status).not.toBe(200);

    // The SP that answers with its signed LogoutResponse: delivered, its status recorded.
    const good = await settled(
      async () => logsOf(GOOD, sid),
      (lines) => lines.some((l) => l.msg === 'back-channel logout delivered'),
    );
    expect(good.find((l) => l.msg === 'back-channel logout delivered')).toMatchObject({
      status: 'urn:oasis:names:tc:SAML:2.0:status:Success',
    });
    const request = received.find((r) => r.path === '/good')?.body ?? '';
    expect(request).toContain(`<SOAP-ENV:Envelope xmlns:SOAP-ENV="${SOAP_ENV}">`);
    expect(xmlsecVerifies(dir, request, idpCert, 'LogoutRequest')).toBe(true);
    expect(xmlsecVerifies(dir, request, keys.certificate, 'LogoutRequest')).toBe(false);
    const doc = new DOMParser().parseFromString(request, 'text/xml') as unknown as Document;
    const logoutRequest = doc.getElementsByTagNameNS(NS_P, 'LogoutRequest')[0];
    expect(logoutRequest?.getAttribute('Destination')).toBe(`${soapUrl}/good`);
    expect(doc.getElementsByTagNameNS(NS_P, 'SessionIndex')[0]?.textContent).toBe(sid);
    expect(doc.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'NameID')[0]?.textContent).toBe(
      asserted.nameId,
    );

    // An unsigned answer is refused and given up (the SP answered; asking again would not help).
    const unsigned = await settled(
      async () => logsOf(UNSIGNED, sid),
      (lines) => lines.some((l) => l.msg === 'back-channel logout given up'),
    );
    expect(String(unsigned.find((l) => l.msg === 'back-channel logout given up')?.error)).toMatch(/must sign/);
    // An answer signed with a key that is not the SP's is refused alike.
    const forged = await settled(
      async () => logsOf(FORGED, sid),
      (lines) => lines.some((l) => l.msg === 'back-channel logout given up'),
    );
    expect(String(forged.find((l) => l.msg === 'back-channel logout given up')?.error)).toMatch(/does not verify/);
    // An answer past the size bound is cut off and recorded as a failure.
    const big = await settled(
      async () => logsOf(BIG, sid),
      (lines) => lines.some((l) => l.msg === 'back-channel logout failed; will retry'),
    );
    expect(String(big.find((l) => l.msg === 'back-channel logout failed; will retry')?.error)).toMatch(/larger than/);
    // The endpoint on a special-use address is never contacted.
    const refused = await settled(
      async () => logsOf(PRIVATE, sid),
      (lines) => lines.some((l) => l.msg === 'back-channel logout failed; will retry'),
    );
    expect(String(refused.find((l) => l.msg === 'back-channel logout failed; will retry')?.error)).toMatch(
      /special-use/,
    );
    expect(received.map((r) => r.path).filter((p) => !['/good', '/unsigned', '/big', '/forged'].includes(p))).toEqual(
      [],
    );
    // The SP without a SOAP endpoint is skipped, and that is logged.
    expect(logsOf(NO_SOAP, sid).map((l) => l.msg)).toEqual([
      'SAML service provider not told of the logout: it has no SOAP SingleLogoutService',
    ]);
    // Sigil still answers.
    expect((await b.get('/saml/metadata')).status).toBe(200);
  });

  it('the command line ends the session (a one-off service): the running node sends the queued LogoutRequest', async () => {
    const b = new Browser(sigil);
    const { sessionIndex: sid } = await ssoInto(b, GOOD);
    // As `sigil users sessions revoke alice` does: no deliverer of its own, the store and the config.
    const cli = new SessionAdmin(sigil.context.store, sigil.context.config, pino({ level: 'silent' }));
    expect(await cli.revokeAll('alice', null)).toMatchObject({ ended: 1 });
    const lines = await settled(
      async () => logsOf(GOOD, sid),
      (found) => found.some((l) => l.msg === 'back-channel logout delivered'),
    );
    expect(lines.find((l) => l.msg === 'back-channel logout delivered')).toMatchObject({
      status: 'urn:oasis:names:tc:SAML:2.0:status:Success',
    });
  });

  it('a logout in the browser sends an SP with a front-channel endpoint nothing over SOAP', async () => {
    const b = new Browser(sigil);
    const { sessionIndex: sid } = await ssoInto(b, GOOD);
    const before = received.length;
    const page = await b.get('/account/logout');
    const done = await b.post('/account/logout', { csrf_token: input(page.body, 'csrf_token'), button: 'logout' });
    expect([200, 303]).toContain(done.status);
    expect(done.body + (done.location ?? '')).toContain(`${GOOD}/slo`);
    expect(received.length).toBe(before);
    expect(logsOf(GOOD, sid)).toEqual([]);
  });
});
