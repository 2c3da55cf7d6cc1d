/** `leftHalfHash` (src/tokens/tokens.ts): `at_hash` / `c_hash` of OIDC Core §3.1.3.6, §3.3.2.11. */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SIGNING_ALGORITHMS } from '../../src/config/schema.js';
import { leftHalfHash } from '../../src/tokens/tokens.js';

describe('leftHalfHash', () => {
  it('matches the OpenID Connect Core 1.0 examples (Appendix A)', () => {
    // A.4 / A.7: access_token and at_hash; A.3 / A.6: code and c_hash (RS256).
    expect(leftHalfHash('jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y', 'RS256')).toBe('77QmUPtjPfzWtF2AnpK9RQ');
    expect(leftHalfHash('Qcb0Orv1zh30vL1MPRsbm-diHiMwcLyZvn1arpZv-Jxf_11jnpEX3Tgfvk', 'RS256')).toBe(
      'LDktKdoQak3Pk0cnXxCltA',
    );
  });

  it('is the base64url of the left half of SHA-2 sized by the algorithm', () => {
    // EdDSA (Ed25519) hashes with SHA-512, as OpenID Connect Core's errata set says.
    const hashOf = (alg: string) =>
      alg.endsWith('512') || alg === 'EdDSA' ? 'sha512' : alg.endsWith('384') ? 'sha384' : 'sha256';
    const lengths: Record<string, number> = { sha256: 22, sha384: 32, sha512: 43 };
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme-ascii', maxLength: 100 }),
        fc.constantFrom(...SIGNING_ALGORITHMS),
        (value, alg) => {
          const full = createHash(hashOf(alg)).update(Buffer.from(value, 'ascii')).digest();
          const expected = full.subarray(0, full.length / 2).toString('base64url');
          const actual = leftHalfHash(value, alg);
          expect(actual).toBe(expected);
          expect(actual).toHaveLength(lengths[hashOf(alg)]!);
          expect(actual).toMatch(/^[A-Za-z0-9_-]+$/);
        },
      ),
    );
  });
});
