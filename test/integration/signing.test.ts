/**
 * Sigil's JWT signatures (made with node:crypto on the request's thread) for every algorithm of
 * SIGNING_ALGORITHMS, checked with jose against the JWKS served at the discovery's `jwks_uri`:
 * arbitrary claim sets round-trip byte for byte, the header is `{"alg","kid","typ"}` as jose's
 * CompactSign wrote it (the whole token equals jose's for the deterministic RSASSA-PKCS1-v1_5 and
 * Ed25519), and across a rotation through /admin/v1 new tokens carry the new key while tokens of the
 * old key verify until it is no longer published.
 */
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import {
  CompactSign,
  compactVerify,
  decodeProtectedHeader,
  errors as joseErrors,
  importJWK,
  type JWK,
  type JWTPayload,
  jwtVerify,
} from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../../src/config/schema.js';
import { compactSigner } from '../../src/keys/compact-jws.js';
import { clientTokens, fetchJwks, introspect, startSigil, type TestSigil, testConfig } from '../helpers.js';

const ISSUER = 'http://127.0.0.1:5999';
const RETENTION = 3600;
/** The JOSE `typ`s Sigil signs with (access tokens, identity tokens, logout tokens, a cookie's). */
const TYPS = ['at+jwt', 'JWT', 'logout+jwt', 'sigil-known-browser+jwt'];
/** Signatures that are the same every time for the same key and input (RFC 8017 §8.2, RFC 8032 §5.1.6). */
const DETERMINISTIC = new Set<string>(['RS256', 'RS384', 'RS512', 'EdDSA']);

let sigil: TestSigil;
let admin: string;

beforeAll(async () => {
  const base = testConfig();
  sigil = await startSigil({
    signingAlgorithms: [...SIGNING_ALGORITHMS],
    // Rotated keys sign at once; no periodic reload moves the clock of the ring during the test.
    signingKeys: {
      propagationSeconds: 0,
      retentionSeconds: RETENTION,
      rotationSeconds: 7_776_000,
      reloadSeconds: 86_400,
    },
    clients: [
      ...base.clients!.filter((c) => c.clientId === 'm2m'),
      {
        clientId: 'automation',
        clientSecrets: ['automation-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:admin'],
      },
    ],
  });
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
}, 60_000);
afterAll(async () => {
  await sigil.close();
});

/** Any JSON object, keys and strings over all of Unicode. */
const anyClaims = fc.dictionary(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }),
  {
    maxKeys: 8,
  },
) as fc.Arbitrary<JWTPayload>;

/** A valid JWT claim set for jwtVerify: registered claims of the right types, any private claims besides. */
const jwtClaims = fc
  .record({
    sub: fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
    aud: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
    lifetime: fc.integer({ min: 60, max: 86_400 }),
    extra: fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }),
  })
  .map(({ sub, aud, lifetime, extra }) => {
    const now = Math.floor(Date.now() / 1000);
    return { ...extra, iss: ISSUER, sub, aud, iat: now, exp: now + lifetime } as JWTPayload & { aud: string };
  });

const anyAlg = fc.constantFrom(...SIGNING_ALGORITHMS);

/** The private key of `kid` as jose imports it, from the store (clear text: no data key in the tests). */
async function storedPrivateKey(kid: string, alg: string) {
  const stored = (await sigil.context.store.keys.listKeys()).find((k) => k.kid === kid)!;
  return importJWK(JSON.parse(stored.privateKey) as JWK, alg);
}

/** The kid that signs `alg` now, read from a token's header. */
function signingKid(alg: SigningAlgorithm): string {
  return decodeProtectedHeader(sigil.context.keys.sign({}, 'JWT', alg)).kid!;
}

describe('every signing algorithm', () => {
  it('signs arbitrary claim sets that compactVerify accepts against the served JWKS, the payload byte for byte, the header as jose wrote it', async () => {
    const jwks = await fetchJwks(sigil);
    const references = new Map<string, Awaited<ReturnType<typeof storedPrivateKey>>>();
    await fc.assert(
      fc.asyncProperty(anyClaims, anyAlg, fc.constantFrom(...TYPS), async (claims, alg, typ) => {
        const token = sigil.context.keys.sign(claims, typ, alg);
        const { payload, protectedHeader } = await compactVerify(token, jwks, { algorithms: [alg] });
        expect(Buffer.from(payload).toString()).toBe(JSON.stringify(claims));
        const kid = signingKid(alg);
        expect(protectedHeader).toEqual({ alg, kid, typ });
        // jose's CompactSign over the same bytes with the same key: the same header and payload
        // segments, and for deterministic signatures the same token.
        if (!references.has(kid)) references.set(kid, await storedPrivateKey(kid, alg));
        const reference = await new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
          .setProtectedHeader({ alg, kid, typ })
          .sign(references.get(kid)!);
        if (DETERMINISTIC.has(alg)) expect(token).toBe(reference);
        else expect(token.split('.').slice(0, 2)).toEqual(reference.split('.').slice(0, 2));
      }),
      { numRuns: 150 },
    );
  });

  it('signs JWT claim sets that jwtVerify accepts (issuer, audience, typ, algorithm, lifetime)', async () => {
    const jwks = await fetchJwks(sigil);
    await fc.assert(
      fc.asyncProperty(jwtClaims, anyAlg, fc.constantFrom(...TYPS), async (claims, alg, typ) => {
        const token = sigil.context.keys.sign(claims, typ, alg);
        const { payload } = await jwtVerify(token, jwks, {
          issuer: ISSUER,
          audience: claims.aud,
          typ,
          algorithms: [alg],
        });
        expect(payload).toEqual(JSON.parse(JSON.stringify(claims)));
      }),
      { numRuns: 100 },
    );
  });

  it('refuses to sign with an algorithm that has no key', () => {
    expect(() => sigil.context.keys.sign({}, 'JWT', 'HS256')).toThrow('no signing key for HS256');
  });

  it('refuses a key that does not fit its algorithm: type, curve, RSA size', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'jwk' }) as JWK;
    const ed25519 = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }) as JWK;
    const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'jwk' }) as JWK;
    expect(() => compactSigner('ES256', 'k', p384)).toThrow('ES256 needs a key on prime256v1');
    expect(() => compactSigner('ES384', 'k', p384)).not.toThrow();
    expect(() => compactSigner('EdDSA', 'k', p384)).toThrow('EdDSA needs an ed25519 key');
    expect(() => compactSigner('PS256', 'k', ed25519)).toThrow('PS256 needs an rsa key');
    expect(() => compactSigner('RS256', 'k', rsa1024)).toThrow('RS256 needs an RSA key of at least 2048 bits');
  });
});

describe('rotation', () => {
  it('new tokens carry the new key of each algorithm and verify; tokens of the old keys verify while those are published', async () => {
    const before = new Map<SigningAlgorithm, { kid: string; token: string }>();
    for (const alg of SIGNING_ALGORITHMS)
      before.set(alg, { kid: signingKid(alg), token: sigil.context.keys.sign({ sub: `before ${alg}` }, 'JWT', alg) });
    const issued = (await clientTokens(sigil, 'api1', ['m2m', 'm2m-secret'])).access_token;
    expect(decodeProtectedHeader(issued).kid).toBe(before.get('RS256')!.kid);

    const rotated = await sigil.app.inject({
      method: 'POST',
      url: '/admin/v1/keys/rotate',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const added = rotated.json<{ added: { kid: string; alg: SigningAlgorithm; activatesAt: number }[] }>().added;
    expect(added.map((k) => k.alg).sort()).toEqual([...SIGNING_ALGORITHMS].sort());
    // A rotation activates strictly after the key it supersedes (the same second may have made it):
    // the reload every node makes, at the time the last of them signs.
    const t = Math.max(...added.map((k) => k.activatesAt));
    await sigil.context.keys.refresh(t);

    const jwks = await fetchJwks(sigil);
    const published = sigil.context.keys.jwks().keys.map((k) => k.kid);
    for (const { kid, alg } of added) {
      expect(signingKid(alg)).toBe(kid);
      expect(published).toEqual(expect.arrayContaining([kid, before.get(alg)!.kid]));
    }
    await fc.assert(
      fc.asyncProperty(anyClaims, anyAlg, async (claims, alg) => {
        const token = sigil.context.keys.sign(claims, 'at+jwt', alg);
        const { protectedHeader } = await compactVerify(token, jwks, { algorithms: [alg] });
        expect(protectedHeader.kid).toBe(added.find((k) => k.alg === alg)!.kid);
      }),
      { numRuns: 60 },
    );
    for (const [alg, { token }] of before)
      expect((await jwtVerify(token, jwks, { algorithms: [alg] })).payload.sub).toBe(`before ${alg}`);
    // Over HTTP: a new token names the new key; the one issued before still introspects active.
    const fresh = (await clientTokens(sigil, 'api1', ['m2m', 'm2m-secret'])).access_token;
    expect(decodeProtectedHeader(fresh).kid).toBe(added.find((k) => k.alg === 'RS256')!.kid);
    await jwtVerify(fresh, jwks, { issuer: ISSUER, typ: 'at+jwt' });
    await jwtVerify(issued, jwks, { issuer: ISSUER, typ: 'at+jwt' });
    expect((await introspect(sigil, issued, ['api1', 'api1-secret'])).json().active).toBe(true);

    // Once the retention period is over the old keys are no longer published: their tokens fail.
    await sigil.context.keys.refresh(t + RETENTION);
    const after = await fetchJwks(sigil);
    expect(
      sigil.context.keys
        .jwks()
        .keys.map((k) => k.kid)
        .sort(),
    ).toEqual(added.map((k) => k.kid).sort());
    for (const [alg, { token }] of before)
      await expect(jwtVerify(token, after, { algorithms: [alg] })).rejects.toBeInstanceOf(joseErrors.JWKSNoMatchingKey);
    await jwtVerify(fresh, after, { issuer: ISSUER, typ: 'at+jwt' });
  }, 60_000);
});
