import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { newFamilyId, newHandle, newId } from '../../src/crypto/handles.js';

describe('random identifiers', () => {
  it('handles are 43 base64url characters (256 bits), ids 22 (128 bits), and none repeats in 20,000 draws', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      const handle = newHandle();
      const id = newId();
      expect(handle).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      seen.add(handle).add(id);
    }
    expect(seen.size).toBe(20_000);
  });

  it('grant family ids: 12 hex digits of the issuing millisecond, then 80 random bits; later ids sort after earlier ones', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 47 }), fc.integer({ min: 1, max: 10 ** 9 }), (earlier, gap) => {
        const clock = vi.spyOn(Date, 'now');
        try {
          clock.mockReturnValue(earlier);
          const first = newFamilyId();
          clock.mockReturnValue(earlier + gap);
          const second = newFamilyId();
          expect(first).toMatch(/^[0-9a-f]{12}[A-Za-z0-9_-]{14}$/);
          expect(first.slice(0, 12)).toBe(earlier.toString(16).padStart(12, '0'));
          expect(second.slice(0, 12) > first.slice(0, 12)).toBe(true);
        } finally {
          clock.mockRestore();
        }
      }),
    );
    const sameMillisecond = new Set(Array.from({ length: 5_000 }, () => newFamilyId()));
    expect(sameMillisecond.size).toBe(5_000);
  });
});
