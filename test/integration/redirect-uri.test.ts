/**
 * Redirect URI matching at the authorization endpoint (RFC 9700 §4.1.3): anything but an exact
 * registered string is answered with the 400 error page, never redirected; a registered loopback
 * IP URI matches any port. The token endpoint's check of the redirect URI is in
 * authorization-code.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSigil } from '../helpers.js';
import {
  Browser,
  CB,
  CB2,
  codeParams,
  countGrants,
  expectErrorPage,
  getCode,
  ISSUER,
  pkce,
  readResponse,
  redeem,
  startAuthorizeSigil,
} from '../authorize-helpers.js';

let sigil: TestSigil;
let signedIn: Browser;
const { verifier, challenge } = pkce();

beforeAll(async () => {
  sigil = await startAuthorizeSigil();
  signedIn = new Browser(sigil);
  await signedIn.signIn('alice');
});
afterAll(async () => sigil.close());

/** Sends a raw (already encoded) query so that malformed values reach the server as they are. */
function rawAuthorize(b: Browser, encodedRedirect: string, client = 'web') {
  const rest = new URLSearchParams(codeParams(challenge, { client_id: client }))
    .toString()
    .replace(/redirect_uri=[^&]*&?/, '');
  return b.get(`/connect/authorize?${rest}&redirect_uri=${encodedRedirect}`);
}

async function expectRefused(uri: string, client = 'web') {
  for (const b of [signedIn, new Browser(sigil)]) {
    const step = await rawAuthorize(b, encodeURIComponent(uri), client);
    expectErrorPage(step, 'invalid_request');
    // The page never turns the value into a link, form or refresh.
    expect(step.body).not.toMatch(/href="(?!\/assets\/)/);
    expect(step.body).not.toMatch(/<form|http-equiv|<script/i);
    expect(step.body).not.toContain('attacker');
    expect(step.body).not.toContain('javascript:');
  }
}

describe('anything but the exact registered string is refused with the error page', () => {
  const cases: Record<string, string[]> = {
    'trailing slash': ['https://rp.example/cb/'],
    'letter case': ['https://rp.example/CB', 'HTTPS://rp.example/cb', 'https://RP.EXAMPLE/cb'],
    'query added, changed, removed': [
      'https://rp.example/cb?foo=bar',
      'https://rp.example/cb2?x=2',
      'https://rp.example/cb2',
      'https://rp.example/cb2?x=1&y=2',
    ],
    fragment: ['https://rp.example/cb#x', 'https://rp.example/cb#'],
    'authority tricks': [
      'https://rp.example.attacker.example/cb',
      'https://attacker.example/rp.example/cb',
      'https://rp.example@attacker.example/cb',
      'https://rp.example@@attacker.example/cb',
      'https://rp.example:443@attacker.example/cb',
      'https://rp.example%40attacker.example/cb',
      'https://rp.example\\@attacker.example/cb',
      'https://attacker.example#@rp.example/cb',
      'https://rp.exampleattacker.example/cb',
    ],
    'path traversal': [
      'https://rp.example/cb/../evil',
      'https://rp.example/cb/..%2Fevil',
      'https://rp.example/cb%252f..%252fevil',
      'https://rp.example/cb/..;/evil',
      'https://rp.example/cb/%2e%2e/evil',
      'https://rp.example/./cb',
    ],
    port: ['https://rp.example:443/cb', 'https://rp.example:8443/cb'],
    'encoding and controls': [
      'https://rp.example/%63b',
      'https://rp.example/cb%09',
      ' https://rp.example/cb',
      'https://rp.example/cb ',
      'https://rp.example/cb\t',
      'https://rp.example/cb%0d%0aX:1',
      'https://rp.example/cb\r\nX: 1',
    ],
    schemes: [
      'javascript:alert(1)//https://rp.example/cb',
      'JaVaScRiPt:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'vbscript:x',
    ],
    'look-alikes and normalization': [
      'https://rp.ex\u0430mple/cb',
      'https://rp.example/\uff43b',
      'https://xn--rp-example/cb',
      'https://rp.example/cafe\u0301',
    ],
  };
  for (const [name, uris] of Object.entries(cases)) {
    it(name, async () => {
      for (const uri of uris) await expectRefused(uri);
    });
  }

  it('a NUL byte in the redirect URI is refused on the error page', async () => {
    expectErrorPage(
      await rawAuthorize(signedIn, `${encodeURIComponent('https://rp.example/cb')}%00`),
      'invalid_request',
    );
  });

  it('control case for queries: the registered URI with a query keeps it and gets each parameter once', async () => {
    const step = await signedIn.get(
      `/connect/authorize?${new URLSearchParams(codeParams(challenge, { redirect_uri: CB2 }))}`,
    );
    expect(step.status).toBe(303);
    expect(step.location?.startsWith(`${CB2}&code=`)).toBe(true);
    const params = new URL(step.location!).searchParams;
    for (const name of ['x', 'code', 'state', 'iss']) expect(params.getAll(name)).toHaveLength(1);
    expect(params.get('x')).toBe('1');
    expect(params.get('iss')).toBe(ISSUER);
  });

  it('control case for look-alikes: a registered non-ASCII URI matches in its own (NFC) form, percent-encoded in Location', async () => {
    for (const [uri, ascii] of [
      ['https://rp.example/caf\u00e9', 'https://rp.example/caf%C3%A9'],
      ['https://rp.example/\u043f\u0443\u0442\u044c', 'https://rp.example/%D0%BF%D1%83%D1%82%D1%8C'],
    ] as const) {
      const step = await signedIn.get(
        `/connect/authorize?${new URLSearchParams(codeParams(challenge, { redirect_uri: uri }))}`,
      );
      const r = readResponse(step);
      expect(r.target).toBe(ascii);
      expect(r.params.get('code')).toBeTruthy();
      // The code is bound to the URI as registered.
      const res = await redeem(sigil, r.params.get('code')!, { redirectUri: uri, verifier });
      expect(res.statusCode, res.body).toBe(200);
    }
    await expectRefused('https://rp.example/\u043f\u0443\u0442\u044c/');
  });

  it('the same refusal before any login: no interaction is started and nothing is issued', async () => {
    const b = new Browser(sigil);
    const step = await rawAuthorize(b, encodeURIComponent('https://attacker.example/cb'));
    expectErrorPage(step, 'invalid_request');
    expect(b.cookies.has('sigil.session')).toBe(false);
  });
});

describe('loopback redirect URIs (client native)', () => {
  const native = (uri: string) => ({
    ...codeParams(challenge, { client_id: 'native', redirect_uri: uri, scope: 'openid api1' }),
  });

  it('a registered loopback IP URI matches with any port (IPv4 and IPv6)', async () => {
    for (const uri of ['http://127.0.0.1:51234/cb', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb']) {
      const b = new Browser(sigil);
      const step = await b.authorize(native(uri));
      const r = readResponse(step);
      expect(r.target).toBe(uri);
      expect(r.params.get('code')).toBeTruthy();
      expect(r.params.get('iss')).toBe(ISSUER);
    }
  });

  it('the code from a loopback URI with a port is redeemed with that same URI', async () => {
    const b = new Browser(sigil);
    const step = await b.authorize(native('http://127.0.0.1:40000/cb'));
    const code = readResponse(step).params.get('code')!;
    const res = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: 'native',
        code,
        redirect_uri: 'http://127.0.0.1:40001/cb',
        code_verifier: verifier,
      }).toString(),
    });
    expect(res.json().error).toBe('invalid_grant');
    const ok = await sigil.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: 'native',
        code,
        redirect_uri: 'http://127.0.0.1:40000/cb',
        code_verifier: verifier,
      }).toString(),
    });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('a private-use scheme URI matches exactly', async () => {
    const b = new Browser(sigil);
    const r = readResponse(await b.authorize(native('com.example.app:/cb')));
    expect(r.location?.startsWith('com.example.app:/cb?code=')).toBe(true);
  });

  it('anything else is refused: other path, query, scheme, host, userinfo, non-loopback port freedom', async () => {
    for (const uri of [
      'http://127.0.0.1:51234/cb?x=1',
      'http://127.0.0.1:51234/other',
      'http://127.0.0.1:51234/cb/',
      'https://127.0.0.1/cb',
      'http://localhost:51234/cb',
      'http://localhost/cb',
      'http://127.0.0.2:51234/cb',
      'http://127.0.0.1:51234@attacker.example/cb',
      'http://127.0.0.1:99999/cb',
      'http://127.0.0.1:/cb',
      'https://rp.example/cb',
      'com.example.app:/cb/',
      'com.example.app://cb',
    ]) {
      await expectRefused(uri, 'native');
    }
    // Port freedom never applies to non-loopback registrations.
    await expectRefused('https://rp.example:444/cb');
  });
});

describe('missing or repeated redirect_uri', () => {
  it('missing redirect_uri is refused even with a single registered URI', async () => {
    const q = new URLSearchParams(codeParams(challenge, { client_id: 'spa', redirect_uri: '' }));
    q.delete('redirect_uri');
    expectErrorPage(await signedIn.get(`/connect/authorize?${q}`), 'invalid_request');
    // An empty value counts as absent (RFC 6749 §3.1).
    expectErrorPage(await rawAuthorize(signedIn, '', 'spa'), 'invalid_request');
  });

  it('a repeated redirect_uri or client_id gives the error page', async () => {
    const q = new URLSearchParams(codeParams(challenge));
    expectErrorPage(
      await signedIn.get(`/connect/authorize?${q}&redirect_uri=${encodeURIComponent(CB)}`),
      'invalid_request',
    );
    expectErrorPage(await signedIn.get(`/connect/authorize?${q}&client_id=web`), 'invalid_request');
  });

  it('refused requests store no code; the control request stores exactly one', async () => {
    const before = countGrants(sigil, 'authorization_code');
    await expectRefused('https://rp.example/cb/');
    await expectRefused('https://attacker.example/cb');
    expect(countGrants(sigil, 'authorization_code')).toBe(before);
    await getCode(signedIn, codeParams(challenge));
    expect(countGrants(sigil, 'authorization_code')).toBe(before + 1);
  });
});
