/**
 * The one redirect URI rule (src/config/redirect-uris.ts) and the client schema that applies it
 * to `redirectUris` and `postLogoutRedirectUris` of every client: an attacker's spellings are
 * refused (case, white space, controls, percent-encoding, user info, look-alike loopback hosts),
 * and a property test that no URI with a dangerous scheme (as a browser parses it), a `*` or a
 * `#` is ever accepted, whatever the client is allowed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DANGEROUS_REDIRECT_SCHEMES,
  redirectUriProblem,
  type RedirectUriAllowance,
} from '../../src/config/redirect-uris.js';
import { clientSchema } from '../../src/config/schema.js';
import { NASTY } from './arbitraries.js';

const ALLOWANCES: RedirectUriAllowance[] = [
  { privateUseSchemes: false, httpOnAnyHost: false },
  { privateUseSchemes: true, httpOnAnyHost: false },
  { privateUseSchemes: false, httpOnAnyHost: true },
  { privateUseSchemes: true, httpOnAnyHost: true },
];

/** The client schema's problems with `uri` as redirect and post-logout redirect URI, as `path: message`. */
function schemaProblems(uri: string, extra: Record<string, unknown> = {}): string[] {
  const parsed = clientSchema.safeParse({
    clientId: 'c',
    requireClientSecret: false,
    allowedGrantTypes: ['authorization_code'],
    redirectUris: [uri],
    postLogoutRedirectUris: [uri],
    ...extra,
  });
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

/** What an attacker writes, each refused for every client (the development flag included). */
const HOSTILE = [
  'javascript:alert(1)',
  'JAVASCRIPT:alert(1)',
  'JavaScript://rp.example/%0aalert(1)',
  ' javascript:alert(1)',
  '\u0000javascript:alert(1)',
  'java\tscript:alert(1)',
  'java\nscript:alert(1)',
  'javascript%3Aalert(1)',
  '%6Aavascript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:msgbox(1)',
  'file:///etc/passwd',
  'https://evil.example/*',
  'https://*.rp.example/cb',
  'https://rp.example/cb#frag',
  'https://rp.example/cb#',
  'https://user@rp.example/cb',
  'https://rp.example@evil.example/cb',
  'https:\\\\evil.example/cb',
  'https://rp.example/cb ',
  '//evil.example/cb',
  '/cb',
];

describe('the redirect URI rule', () => {
  it('refuses what an attacker writes, for every client, and through the client schema at both fields', () => {
    for (const uri of HOSTILE) {
      for (const allowance of ALLOWANCES)
        expect(redirectUriProblem(uri, allowance), `${JSON.stringify(uri)} ${JSON.stringify(allowance)}`).toBeDefined();
      const problems = schemaProblems(uri, { allowHttpRedirectUris: true });
      expect(problems, JSON.stringify(uri)).toEqual([
        expect.stringMatching(/^redirectUris\.0: /),
        expect.stringMatching(/^postLogoutRedirectUris\.0: /),
      ]);
    }
  });

  it('takes http on a loopback host only (127.0.0.0/8, [::1], localhost), unless the client is marked for development', () => {
    for (const uri of [
      'http://localhost.evil.example/cb',
      'http://127.0.0.1.nip.io/cb',
      'http://localhost./cb',
      'http://[::ffff:127.0.0.1]/cb',
      'http://rp.example/cb',
      'http://10.0.0.1/cb',
    ]) {
      expect(schemaProblems(uri)).toEqual([
        expect.stringMatching(/^redirectUris\.0: http is allowed only on a loopback host/),
        expect.stringMatching(/^postLogoutRedirectUris\.0: /),
      ]);
      expect(schemaProblems(uri, { allowHttpRedirectUris: true })).toEqual([]);
    }
    for (const uri of [
      'http://localhost:5001/callback',
      'http://127.0.0.1/cb',
      'http://127.8.9.10:8080/cb',
      'http://[::1]:33418/cb',
      'https://rp.example/cb?x=1',
      'https://rp.example/caf\u00e9',
    ])
      expect(schemaProblems(uri), uri).toEqual([]);
  });

  it('takes private-use schemes in reverse domain name form only (RFC 8252 §7.1), and only where allowed', () => {
    expect(schemaProblems('com.example.app:/callback')).toEqual([]);
    expect(schemaProblems('myapp://callback')).toEqual([
      expect.stringMatching(/^redirectUris\.0: a private-use scheme must be a reverse domain name/),
      expect.anything(),
    ]);
    expect(redirectUriProblem('com.example.app:/callback', { privateUseSchemes: false, httpOnAnyHost: true })).toBe(
      'must use https, or http on a loopback host',
    );
  });

  it('never accepts a URI with a dangerous scheme (as a browser parses it), a * or a fragment, whatever the client may', () => {
    const sprinkle = fc.constantFrom('', ' ', '\t', '\n', '\r', '\u0000', '\u001f', '\u00a0', '\u200b');
    const dangerous = fc
      .tuple(
        sprinkle,
        fc.constantFrom(...DANGEROUS_REDIRECT_SCHEMES.map((s) => s.slice(0, -1))),
        fc.integer({ min: 0, max: 12 }),
        sprinkle,
        fc.string({ maxLength: 40 }),
      )
      .chain(([lead, scheme, at, inside, tail]) =>
        fc.mixedCase(fc.constant(scheme)).map((s) => `${lead}${s.slice(0, at)}${inside}${s.slice(at)}:${tail}`),
      );
    const inserted = (char: string) =>
      fc
        .tuple(fc.webUrl({ withQueryParameters: true }), fc.nat())
        .map(([url, at]) => `${url.slice(0, at % (url.length + 1))}${char}${url.slice(at % (url.length + 1))}`);
    const urlish = fc.string({
      unit: fc.oneof(
        fc.constantFrom(':', '/', '#', '*', '%', '@', '.', 'a', 'h', 't', 'p', 's', 'j', 'v', 'd', 'f', ...NASTY),
        fc.string({ minLength: 1, maxLength: 1 }),
      ),
      maxLength: 40,
    });
    const candidate = fc.oneof(
      dangerous,
      inserted('*'),
      inserted('#'),
      fc.webUrl({ withFragments: true, withQueryParameters: true }),
      urlish,
    );
    fc.assert(
      fc.property(candidate, fc.constantFrom(...ALLOWANCES), (uri, allowance) => {
        if (redirectUriProblem(uri, allowance) !== undefined) return;
        // Accepted: absolute, and nothing a browser would run, no wildcard, no fragment.
        expect(URL.canParse(uri)).toBe(true);
        expect(DANGEROUS_REDIRECT_SCHEMES).not.toContain(new URL(uri).protocol);
        expect(uri).not.toContain('*');
        expect(uri).not.toContain('#');
        expect(new URL(uri).hash).toBe('');
      }),
      { numRuns: 2000 },
    );
  });
});
