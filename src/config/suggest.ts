/**
 * "Did you mean …" for names typed by a person (CLI commands and options, grant type names in the
 * config): the closest of a handful of known names by Levenshtein distance (fastest-levenshtein).
 */
import { distance as editDistance } from 'fastest-levenshtein';

/**
 * The known name closest to `name`, if one is close enough to be a typo of it: at most two edits,
 * and fewer than half of `name`'s length (so that "x" suggests nothing). Case is ignored.
 * @returns the suggestion, or undefined.
 */
export function closest(name: string, known: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= 2 && distance < name.length / 2 && (best === undefined || distance < best.distance))
      best = { name: candidate, distance };
  }
  return best?.name;
}
