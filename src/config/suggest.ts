/**
 * "Did you mean …" for names typed by a person (CLI commands and options, grant type names in the
 * config): the closest of a handful of known names by edit distance.
 */

/**
 * The edit distance of two strings, counting an insertion, a deletion, a substitution or a swap of
 * two neighbouring characters as one edit (optimal string alignment distance).
 */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

/**
 * The known name closest to `name`, if one is close enough to be a typo of it: at most two edits,
 * and fewer than half of `name`'s length (so that "x" suggests nothing). Case is ignored.
 * @returns the suggestion, or undefined.
 */
export function closest(name: string, known: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= 2 && distance < name.length / 2 && (best === undefined || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}
