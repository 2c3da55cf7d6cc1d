/** `findCredentials` (src/clients/authentication.ts): Basic per RFC 6749 §2.3.1, or body params. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/protocol/errors.js';
import { Params } from '../../src/protocol/params.js';
import { findCredentials } from '../../src/clients/authentication.js';
import { formEncode, formishText, unicodeText, caught } from './arbitraries.js';

const noNul = (s: string) => !s.includes('\u0000');
const clientId = unicodeText({ minLength: 1, maxLength: 30 }).filter((s) => s.length > 0 && noNul(s));
const secret = unicodeText({ maxLength: 60 }).filter(noNul);
/**
 * RFC 6749 §2.3.1 says "encoded using the application/x-www-form-urlencoded encoding algorithm"; clients in
 * the wild use encodeURIComponent.
 */
const encoder = fc.constantFrom(
  formEncode,
  (s: string) => encodeURIComponent(s).replace(/%20/g, '+'),
  encodeURIComponent,
);
const scheme = fc.constantFrom('Basic', 'basic', 'BASIC', 'bAsIc');

const basicHeader = (enc: (s: string) => string, id: string, sec: string, sch = 'Basic') =>
  `${sch} ${Buffer.from(`${enc(id)}:${enc(sec)}`, 'utf8').toString('base64')}`;
const source = (authorization: string[], body = '') => ({ authorization, params: Params.parse(body) });

describe('findCredentials', () => {
  it('round-trips Basic credentials with arbitrary Unicode id and secret; an empty secret is none (RFC 6749 §2.3.1)', () => {
    fc.assert(
      fc.property(encoder, scheme, clientId, secret, (enc, sch, id, sec) => {
        const expected = { id, secret: sec === '' ? undefined : sec, method: 'client_secret_basic' };
        expect(findCredentials(source([basicHeader(enc, id, sec, sch)]))).toEqual(expected);
      }),
    );
  });

  it('accepts the same client_id in the body alongside Basic, refuses a different one or a second secret', () => {
    fc.assert(
      fc.property(clientId, secret, clientId, (id, sec, other) => {
        const header = basicHeader(formEncode, id, sec);
        expect(findCredentials(source([header], `client_id=${formEncode(id)}`))?.id).toBe(id);
        if (other !== id)
          expect(caught(() => findCredentials(source([header], `client_id=${formEncode(other)}`)))?.code).toBe(
            'invalid_request',
          );
        expect(caught(() => findCredentials(source([header], `client_secret=${formEncode(sec || 'x')}`)))?.code).toBe(
          'invalid_request',
        );
      }),
    );
  });

  it('reads client_secret_post and public clients from the body', () => {
    fc.assert(
      fc.property(
        clientId,
        secret.filter((s) => s.length > 0),
        (id, sec) => {
          expect(
            findCredentials(source([], new URLSearchParams({ client_id: id, client_secret: sec }).toString())),
          ).toEqual({
            id,
            secret: sec,
            method: 'client_secret_post',
          });
          expect(findCredentials(source([], new URLSearchParams({ client_id: id }).toString()))).toEqual({
            id,
            secret: undefined,
            method: 'none',
          });
          expect(
            caught(() => findCredentials(source([], new URLSearchParams({ client_secret: sec }).toString())))?.code,
          ).toBe('invalid_request');
        },
      ),
    );
  });

  it('no credentials, or another scheme, is undefined', () => {
    expect(findCredentials(source([]))).toBeUndefined();
    expect(findCredentials(source(['Bearer abc']))).toBeUndefined();
    expect(findCredentials(source(['Digest username="x"'], 'grant_type=x'))).toBeUndefined();
  });

  it('a malformed Basic header is invalid_client with WWW-Authenticate; a repeated header invalid_request', () => {
    for (const bad of [
      'Basic ',
      'Basic !!!',
      `Basic ${Buffer.from('nocolon').toString('base64')}`,
      `Basic ${Buffer.from(':secret').toString('base64')}`,
      `Basic ${Buffer.from('a%zz:b').toString('base64')}`,
      `Basic ${Buffer.from('a%00:b').toString('base64')}`,
    ]) {
      const err = caught(() => findCredentials(source([bad])));
      expect(err?.code, bad).toBe('invalid_client');
      expect(err?.status).toBe(401);
      expect(err?.headers['www-authenticate']).toMatch(/^Basic /);
    }
    expect(caught(() => findCredentials(source(['Basic YTpi', 'Basic YTpi'])))?.code).toBe('invalid_request');
  });

  it('never throws anything but OAuthError, whatever the header and body', () => {
    const header = fc.oneof(
      unicodeText({ maxLength: 40 }),
      fc
        .tuple(
          scheme,
          fc.string({ unit: fc.constantFrom('A', 'z', '0', '+', '/', '=', ' ', '-', '_', '.'), maxLength: 30 }),
        )
        .map(([s, b]) => `${s} ${b}`),
      fc
        .tuple(scheme, formishText, formishText)
        .map(([s, a, b]) => `${s} ${Buffer.from(`${a}:${b}`).toString('base64')}`),
      fc.tuple(scheme, fc.uint8Array({ maxLength: 30 })).map(([s, b]) => `${s} ${Buffer.from(b).toString('base64')}`),
    );
    const body = fc.oneof(
      fc.constant(''),
      fc.constantFrom(
        'client_id=a',
        'client_secret=b',
        'client_id=a&client_secret=b',
        'client_id=a&client_id=b',
        'client_secret=a&client_secret=b',
      ),
    );
    fc.assert(
      fc.property(fc.array(header, { maxLength: 2 }), body, (headers, b) => {
        let out;
        try {
          out = findCredentials(source(headers, b));
        } catch (err) {
          expect(err).toBeInstanceOf(OAuthError);
          expect(['invalid_request', 'invalid_client']).toContain((err as OAuthError).code);
          return;
        }
        if (out) {
          expect(out.id.length).toBeGreaterThan(0);
          expect(out.id).not.toContain('\u0000');
        }
      }),
    );
  });
});

describe('findCredentials: client assertions (RFC 7521 §4.2)', () => {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const jwt = (header: unknown, payload: unknown) => `${b64(header)}.${b64(payload)}.c2ln`;
  const body = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

  it('names the client by client_id, else by the unverified sub, and the method by alg', () => {
    const es = jwt({ alg: 'ES256' }, { sub: 'pk' });
    expect(findCredentials(source([], body({ client_assertion_type: TYPE, client_assertion: es })))).toEqual({
      id: 'pk',
      secret: undefined,
      method: 'private_key_jwt',
      assertion: es,
    });
    const hs = jwt({ alg: 'HS256' }, { sub: 'other' });
    expect(
      findCredentials(source([], body({ client_id: 'cs', client_assertion_type: TYPE, client_assertion: hs }))),
    ).toMatchObject({
      id: 'cs',
      method: 'client_secret_jwt',
    });
  });

  it('refuses assertions that name no client or are no JWT (invalid_client), and mixed or incomplete forms (invalid_request)', () => {
    const code = (authorization: string[], fields: Record<string, string>) =>
      caught(() => findCredentials(source(authorization, body(fields))))?.code;
    const a = jwt({ alg: 'ES256' }, { sub: 'pk' });
    expect(code([], { client_assertion_type: TYPE, client_assertion: jwt({ alg: 'ES256' }, { iss: 'pk' }) })).toBe(
      'invalid_client',
    );
    expect(code([], { client_assertion_type: TYPE, client_assertion: 'not-a-jwt' })).toBe('invalid_client');
    expect(code([], { client_assertion_type: TYPE, client_assertion: jwt({}, { sub: 'pk' }) })).toBe('invalid_client');
    expect(
      code([], {
        client_assertion_type: TYPE,
        client_assertion: `${b64({ alg: 'ES256' })}.${b64({ sub: 'pk', x: JSON.parse('['.repeat(20) + ']'.repeat(20)) })}.c2ln`,
      }),
    ).toBe('invalid_client');
    expect(code([], { client_assertion_type: TYPE, client_assertion: a, client_secret: 's' })).toBe('invalid_request');
    expect(code(['Basic cGs6cw=='], { client_assertion_type: TYPE, client_assertion: a })).toBe('invalid_request');
    expect(code([], { client_assertion: a })).toBe('invalid_request');
    expect(code([], { client_assertion_type: TYPE })).toBe('invalid_request');
    expect(code([], { client_assertion_type: 'urn:other', client_assertion: a })).toBe('invalid_request');
  });
});
