/**
 * JSON Merge Patch (RFC 7396), as PATCH /admin/v1 applies it: the examples of Appendix A, and
 * properties over arbitrary JSON (idempotence, §1: applying a patch twice is applying it once).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyMergePatch, changedMembers } from '../../src/protocol/merge-patch.js';

describe('applyMergePatch', () => {
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('RFC 7396 Appendix A: %j patched with %j is %j', (target, patch, result) => {
    expect(applyMergePatch(target, patch)).toEqual(result);
  });

  it('keeps a member named __proto__ a member, never the prototype', () => {
    const result = applyMergePatch(
      { a: 1 },
      JSON.parse('{"__proto__":{"polluted":true},"constructor":{"x":1}}'),
    ) as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect((result as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(result))).toEqual(
      JSON.parse('{"a":1,"__proto__":{"polluted":true},"constructor":{"x":1}}'),
    );
  });

  it('is idempotent and leaves its arguments unchanged', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 4 }), (target, patch) => {
        const before = JSON.stringify([target, patch]);
        const once = applyMergePatch(target, patch);
        expect(applyMergePatch(once, patch)).toEqual(once);
        expect(JSON.stringify([target, patch])).toBe(before);
      }),
    );
  });

  it('names exactly the members a patch changed', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
        (target, patch) => {
          const after = applyMergePatch(target, patch) as Record<string, unknown>;
          for (const name of changedMembers(target, after))
            expect(JSON.stringify(target[name])).not.toBe(JSON.stringify(after[name]));
        },
      ),
    );
  });
});
