/**
 * JSON Merge Patch (RFC 7396): how the management API's PATCH requests change an item.
 */

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Applies `patch` to `target` as RFC 7396 §2 defines (`MergePatch`): an object patch merges
 * member by member, a `null` member removes that member, anything else replaces the whole
 * target. Neither argument is changed.
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete out[name];
    // Defined, not assigned: a member named "__proto__" (JSON.parse makes it an own member) stays
    // a member instead of replacing the object's prototype.
    else
      Object.defineProperty(out, name, {
        value: applyMergePatch(Object.hasOwn(out, name) ? out[name] : undefined, value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}

/**
 * The top-level members whose value differs between `before` and `after` (by their JSON), in `after`'s order
 * then removed ones.
 */
export function changedMembers(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const names = new Set([...Object.keys(after), ...Object.keys(before)]);
  return [...names].filter((n) => JSON.stringify(before[n]) !== JSON.stringify(after[n]));
}
