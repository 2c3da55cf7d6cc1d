/**
 * The pure parts of Client ID Metadata Documents: which addresses a caller-chosen URL may reach
 * (RFC 6890), which client_id strings are Client Identifier URLs (draft §3), how long a document
 * is cached (RFC 9111), and what a document may contain (draft §4).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CACHE_DEFAULT_SECONDS,
  CACHE_MAX_SECONDS,
  CACHE_MIN_SECONDS,
  clientFromDocument,
  clientIdUrlProblem,
  freshnessSeconds,
  MetadataDocumentError,
} from '../../src/clients/metadata-documents.js';
import { isFetchableAddress } from '../../src/http/outbound.js';

const URL_ID = 'https://agent.example/oauth/client.json';
const SCOPES = ['openid', 'profile', 'api1', 'offline_access', 'sigil:admin'];
const valid = {
  client_id: URL_ID,
  client_name: 'Agent',
  redirect_uris: ['http://127.0.0.1/callback', 'https://agent.example/cb'],
};

describe('the SSRF guard: isFetchableAddress', () => {
  it('refuses special-use addresses and allows public ones; loopback only when allowed', () => {
    for (const a of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '127.0.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '192.0.2.1',
      '198.18.0.1',
      '::',
      '::1',
      'fe80::1',
      'fc00::1',
      'fd12::1',
      'ff02::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      '64:ff9b::a00:1',
      '2002:a00:1::1',
      '2001:db8::1',
      'not-an-ip',
    ])
      expect(isFetchableAddress(a, false), a).toBe(false);
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001::1'])
      expect(isFetchableAddress(a, false), a).toBe(true);
    expect(isFetchableAddress('127.0.0.1', true)).toBe(true);
    expect(isFetchableAddress('127.8.9.10', true)).toBe(true);
    expect(isFetchableAddress('::1', true)).toBe(true);
    // Loopback in disguise and private ranges stay refused with the development setting.
    for (const a of ['::ffff:127.0.0.1', '10.0.0.1', '192.168.1.1', 'fe80::1'])
      expect(isFetchableAddress(a, true), a).toBe(false);
  });

  it('refuses every address of the private IPv4 ranges and every IPv4-mapped IPv6 address', () => {
    const byte = fc.integer({ min: 0, max: 255 });
    fc.assert(
      fc.property(byte, byte, byte, fc.boolean(), (b, c, d, loopback) => {
        expect(isFetchableAddress(`10.${b}.${c}.${d}`, loopback)).toBe(false);
        expect(isFetchableAddress(`192.168.${c}.${d}`, loopback)).toBe(false);
        expect(isFetchableAddress(`172.${16 + (b % 16)}.${c}.${d}`, loopback)).toBe(false);
        expect(isFetchableAddress(`::ffff:${b}.${b}.${c}.${d}`, loopback)).toBe(false);
      }),
    );
  });
});

describe('Client Identifier URLs: clientIdUrlProblem', () => {
  it('accepts normalized https URLs with a path, and says what is wrong with others', () => {
    expect(clientIdUrlProblem(URL_ID)).toBeUndefined();
    expect(clientIdUrlProblem('https://agent.example:8443/c?v=1')).toBeUndefined();
    expect(clientIdUrlProblem('http://agent.example/c')).toContain('https');
    expect(clientIdUrlProblem('https://agent.example/')).toContain('path');
    expect(clientIdUrlProblem('https://agent.example')).toContain('path');
    expect(clientIdUrlProblem('https://agent.example/a/./c')).toContain('. or ..');
    expect(clientIdUrlProblem('https://agent.example/a/%2E%2e/c')).toContain('. or ..');
    expect(clientIdUrlProblem('https://u@agent.example/c')).toContain('user name');
    expect(clientIdUrlProblem('https://agent.example/c#f')).toContain('fragment');
    expect(clientIdUrlProblem('https://Agent.example/c')).toContain('normalized');
    expect(clientIdUrlProblem('https://agent.example:443/c')).toContain('normalized');
    expect(clientIdUrlProblem('https://agent.example/c d')).toContain('normalized');
    expect(clientIdUrlProblem(`https://agent.example/${'c'.repeat(100)}`)).toContain('longer than 100');
  });

  it('accepts no string that is not exactly the https URL a parser makes of it', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.webUrl({ withQueryParameters: true, withFragments: true }),
          fc.webPath().map((p) => `https://a.example${p}`),
        ),
        (s) => {
          if (clientIdUrlProblem(s) !== undefined) return;
          const url = new URL(s);
          expect(url.href).toBe(s);
          expect(url.protocol).toBe('https:');
          expect(url.username + url.password + url.hash).toBe('');
          expect(url.pathname).not.toBe('/');
        },
      ),
    );
  });
});

describe('caching: freshnessSeconds', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  it('follows Cache-Control and Expires, within the floor and the ceiling', () => {
    expect(freshnessSeconds({ 'cache-control': 'no-store' }, now)).toBeUndefined();
    expect(freshnessSeconds({ 'cache-control': 'public, max-age=3600' }, now)).toBe(3600);
    expect(freshnessSeconds({ 'cache-control': 'max-age=0' }, now)).toBe(CACHE_MIN_SECONDS);
    expect(freshnessSeconds({ 'cache-control': 'max-age=999999' }, now)).toBe(CACHE_MAX_SECONDS);
    expect(
      freshnessSeconds({ expires: 'Wed, 25 Nov 2026 13:00:00 GMT', date: 'Wed, 25 Nov 2026 12:00:00 GMT' }, now),
    ).toBe(3600);
    expect(freshnessSeconds({ expires: 'garbage' }, now)).toBe(CACHE_MIN_SECONDS);
    expect(freshnessSeconds({ 'cache-control': 'max-age=120', expires: 'Wed, 25 Nov 2026 13:00:00 GMT' }, now)).toBe(
      120,
    );
    expect(freshnessSeconds({}, now)).toBe(CACHE_DEFAULT_SECONDS);
  });

  it('never answers beyond the bounds, whatever the headers', () => {
    fc.assert(
      fc.property(fc.string(), fc.option(fc.string()), (cacheControl, expires) => {
        const s = freshnessSeconds({ 'cache-control': cacheControl, ...(expires !== null ? { expires } : {}) }, now);
        if (s === undefined) expect(cacheControl.toLowerCase()).toContain('no-store');
        else expect(s >= CACHE_MIN_SECONDS && s <= CACHE_MAX_SECONDS).toBe(true);
      }),
    );
  });
});

describe('documents: clientFromDocument', () => {
  it('makes a narrow client: public, code + PKCE, consent, no sigil:* scopes', () => {
    const c = clientFromDocument(
      URL_ID,
      { ...valid, grant_types: ['authorization_code', 'refresh_token'], logo_uri: 'https://agent.example/logo.png' },
      SCOPES,
    );
    expect(c).toMatchObject({
      clientId: URL_ID,
      clientName: 'Agent',
      isPublic: true,
      allowedGrantTypes: ['authorization_code'],
      allowOfflineAccess: true,
      requirePkce: true,
      requireConsent: true,
      metadataDocument: true,
      logoUri: 'https://agent.example/logo.png',
    });
    expect(c.allowedScopes).toEqual(['openid', 'profile', 'api1', 'offline_access']);
    expect(clientFromDocument(URL_ID, { ...valid, scope: 'openid sigil:admin' }, SCOPES).allowedScopes).toEqual([
      'openid',
    ]);
    expect(clientFromDocument(URL_ID, valid, SCOPES).allowedScopes).not.toContain('offline_access');
  });

  it('refuses what a document may not say', () => {
    const refused = (doc: Record<string, unknown>, why: string) =>
      expect(() => clientFromDocument(URL_ID, { ...valid, ...doc }, SCOPES)).toThrow(why);
    refused({ client_id: 'https://other.example/c' }, 'client_id other than its URL');
    refused({ client_secret: 'x' }, 'client_secret');
    refused({ token_endpoint_auth_method: 'client_secret_post' }, 'none or private_key_jwt');
    refused({ token_endpoint_auth_method: 'private_key_jwt' }, 'jwks');
    refused({ grant_types: ['client_credentials'] }, 'grant types');
    refused({ grant_types: ['authorization_code', 'password'] }, 'grant types');
    refused({ response_types: ['token'] }, 'response_type code');
    refused({ redirect_uris: [] }, 'redirect_uris');
    refused({ redirect_uris: ['javascript:alert(1)'] }, 'redirect_uri');
    refused({ redirect_uris: ['http://agent.example/cb'] }, 'redirect_uri');
    refused({ redirect_uris: ['https://agent.example/cb#x'] }, 'redirect_uri');
    refused({ redirect_uris: ['https://*.example/cb'] }, 'redirect_uri');
    refused({ jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, 'public keys only');
    refused({ jwks_uri: 'http://agent.example/jwks' }, 'jwks_uri');
    refused({ logo_uri: 'javascript:alert(1)' }, 'logo_uri');
    refused({ client_name: 'x'.repeat(201) }, 'client_name');
    expect(() => clientFromDocument(URL_ID, [valid], SCOPES)).toThrow('not a JSON object');
  });

  it('refuses the redirect URIs every client path refuses: user info, rewritten characters, look-alike loopback hosts; never localhost', () => {
    for (const uri of [
      'https://user@agent.example/cb',
      'https://agent.example@evil.example/cb',
      ' https://agent.example/cb',
      'https://agent.example/c\tb',
      'https:\\\\evil.example/cb',
      'http://127.0.0.1.nip.io/cb',
      'http://localhost/cb',
      'myagent:/cb',
    ])
      expect(() => clientFromDocument(URL_ID, { ...valid, redirect_uris: [uri] }, SCOPES), JSON.stringify(uri)).toThrow(
        'redirect_uri',
      );
    for (const uri of ['http://127.0.0.1:4000/cb', 'http://[::1]/cb', 'com.example.agent:/cb'])
      expect(clientFromDocument(URL_ID, { ...valid, redirect_uris: [uri] }, SCOPES).redirectUris).toEqual([uri]);
  });

  it('throws only MetadataDocumentError for any JSON at all', () => {
    const keys = fc.constantFrom(
      'client_id',
      'redirect_uris',
      'grant_types',
      'response_types',
      'token_endpoint_auth_method',
      'jwks',
      'jwks_uri',
      'scope',
      'client_name',
      'logo_uri',
      'token_endpoint_auth_signing_alg',
      'client_secret',
    );
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.dictionary(keys, fc.jsonValue())), fc.boolean(), (doc, own) => {
        const document =
          own && typeof doc === 'object' && doc !== null && !Array.isArray(doc) ? { ...doc, client_id: URL_ID } : doc;
        try {
          clientFromDocument(URL_ID, document, SCOPES);
        } catch (err) {
          expect(err).toBeInstanceOf(MetadataDocumentError);
        }
      }),
    );
  });
});
