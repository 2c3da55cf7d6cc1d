/**
 * pysaml2 (Debian's python3-pysaml2 with xmlsec1) as a second real service provider, driven by
 * test/pysaml2-sp.py: its own metadata registers it, it builds a signed AuthnRequest (HTTP-Redirect)
 * for Sigil's metadata, the sign-in runs on Sigil's login page over HTTP, and pysaml2 reads the
 * posted Response, checking its signatures against Sigil's metadata. Then single logout: pysaml2's
 * signed LogoutRequest ends the Sigil session and pysaml2 verifies Sigil's LogoutResponse. A second
 * pysaml2 SP with an encryption key in its metadata gets its assertion encrypted (`encryptAssertion`),
 * which pysaml2 (xmlsec1) decrypts before it checks the assertion's signature.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, ISSUER, isLoginPage, startAuthorizeSigil } from '../authorize-helpers.js';
import type { TestSigil } from '../helpers.js';
import { postedResponse } from '../saml-helpers.js';

const SCRIPT = join(import.meta.dirname, '..', 'pysaml2-sp.py');
const SP_BASE = 'http://127.0.0.1:8999/pysaml2';
const SP_ENTITY = `${SP_BASE}/metadata`;
/** The pysaml2 SP that takes encrypted assertions. */
const ENC_BASE = 'http://127.0.0.1:8999/pysaml2-enc';

let dir: string;
let sigil: TestSigil;

/** Runs a command of the pysaml2 SP (the one at `base`); its stdout. */
function pysaml2On(base: string, ...args: string[]): string {
  return execFileSync('/usr/bin/python3', [SCRIPT, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: '/usr/bin:/bin',
      SP_ENTITY_ID: `${base}/metadata`,
      SP_BASE: base,
      SP_KEY: join(dir, 'sp.key'),
      SP_CERT: join(dir, 'sp.crt'),
      IDP_METADATA: join(dir, 'idp.xml'),
      ...(base === ENC_BASE ? { SP_ENC_KEY: join(dir, 'enc.key'), SP_ENC_CERT: join(dir, 'enc.crt') } : {}),
    },
  });
}

function pysaml2(...args: string[]): string {
  return pysaml2On(SP_BASE, ...args);
}

/** A fresh RSA key and self-signed certificate in `dir` (name.key, name.crt). */
function keyPair(name: string): void {
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=pysaml2 ${name}`].concat([
      '-keyout',
      join(dir, `${name}.key`),
      '-out',
      join(dir, `${name}.crt`),
    ]),
    { stdio: 'pipe' },
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sigil-pysaml2-'));
  keyPair('sp');
  keyPair('enc');
  const metadataXml = pysaml2('metadata');
  const encMetadataXml = pysaml2On(ENC_BASE, 'metadata');
  expect(encMetadataXml).toContain('use="encryption"');
  sigil = await startAuthorizeSigil([], {
    saml: { enabled: true },
    samlServiceProviders: [
      { entityId: SP_ENTITY, metadataXml, attributes: { mail: 'email', displayName: 'name', role: 'role' } },
      {
        entityId: `${ENC_BASE}/metadata`,
        metadataXml: encMetadataXml,
        attributes: { mail: 'email', displayName: 'name' },
        encryptAssertion: true,
      },
    ],
  });
  const metadata = await new Browser(sigil).get('/saml/metadata');
  expect(metadata.status).toBe(200);
  writeFileSync(join(dir, 'idp.xml'), metadata.body);
  expect(readFileSync(join(dir, 'idp.xml'), 'utf8')).toContain(ISSUER);
}, 60_000);
afterAll(async () => {
  await sigil?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('pysaml2 as the service provider', () => {
  it('signs in with a signed AuthnRequest; pysaml2 verifies the Response; its LogoutRequest ends the session', async () => {
    const login = JSON.parse(pysaml2('login')) as { url: string; id: string };
    expect(login.url.startsWith(`${ISSUER}/saml/sso?SAMLRequest=`)).toBe(true);
    const b = new Browser(sigil);
    let step = await b.follow(await b.get(login.url));
    expect(isLoginPage(step), step.body).toBe(true);
    step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
    const posted = postedResponse(step.body);
    expect(posted.action).toBe(`${SP_BASE}/acs`);
    expect(posted.relayState).toBe('pysaml2');
    const response = Buffer.from(posted.xml).toString('base64');
    const read = JSON.parse(pysaml2('acs', response, login.id)) as {
      nameId: string;
      nameIdFormat: string;
      sessionIndex: string;
      attributes: Record<string, string[]>;
    };
    expect(read.nameIdFormat).toBe('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    expect(read.nameId).toMatch(/^[\w-]{43}$/);
    expect(read.attributes).toMatchObject({ mail: ['alice@example.com'], displayName: ['Alice Smith'] });
    // The same Response for a request pysaml2 never sent is refused by pysaml2 (InResponseTo).
    expect(() => pysaml2('acs', response, '_other')).toThrow();
    // A tampered Response fails pysaml2's signature check.
    const tampered = Buffer.from(posted.xml.replace('alice@example.com', 'mallory@example.com')).toString('base64');
    expect(() => pysaml2('acs', tampered, login.id)).toThrow();

    // Single logout: pysaml2's signed LogoutRequest (HTTP-Redirect) ends the Sigil session.
    const logout = JSON.parse(pysaml2('logout', read.nameId, read.sessionIndex)) as { url: string; id: string };
    const answer = await b.get(logout.url);
    expect(answer.status, answer.body).toBe(303);
    expect(answer.location?.startsWith(`${SP_BASE}/slo?SAMLResponse=`)).toBe(true);
    expect((await b.get('/account')).status).toBe(303);
    const verified = JSON.parse(pysaml2('logout-response', answer.location ?? '')) as {
      inResponseTo: string;
      status: string;
    };
    expect(verified).toEqual({ inResponseTo: logout.id, status: 'urn:oasis:names:tc:SAML:2.0:status:Success' });
    // pysaml2's check of the query signature is real: a changed RelayState fails it.
    expect(answer.location).toContain('&RelayState=pysaml2-logout&');
    const altered = (answer.location ?? '').replace('&RelayState=pysaml2-logout&', '&RelayState=elsewhere&');
    expect(() => pysaml2('logout-response', altered)).toThrow(/does not verify/);
    // Each pysaml2 command is a Python process that loads pysaml2 (a second or more on a loaded machine).
  }, 120_000);

  it('an SP with encryptAssertion: pysaml2 decrypts the assertion and verifies its signature', async () => {
    const login = JSON.parse(pysaml2On(ENC_BASE, 'login')) as { url: string; id: string };
    const b = new Browser(sigil);
    let step = await b.follow(await b.get(login.url));
    expect(isLoginPage(step), step.body).toBe(true);
    step = await b.follow(await b.submitLogin(step, 'alice', 'alice'));
    const posted = postedResponse(step.body);
    expect(posted.action).toBe(`${ENC_BASE}/acs`);
    expect(posted.xml).toContain('<saml:EncryptedAssertion>');
    expect(posted.xml).not.toContain('<saml:Assertion');
    expect(posted.xml).not.toContain('alice@example.com');
    const response = Buffer.from(posted.xml).toString('base64');
    const read = JSON.parse(pysaml2On(ENC_BASE, 'acs', response, login.id)) as {
      nameIdFormat: string;
      attributes: Record<string, string[]>;
    };
    expect(read.nameIdFormat).toBe('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    expect(read.attributes).toEqual({ mail: ['alice@example.com'], displayName: ['Alice Smith'] });
  }, 120_000);
});
