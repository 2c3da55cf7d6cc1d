/**
 * The one error the admin services (`src/admin/`) throw for a refused request, and the input
 * check they share. Callers map the error to their own answer: the command line to a message and
 * an exit code, a management API to an HTTP status (409 for a config-file item, which is
 * read-only through it).
 */
import type * as z from 'zod';
import { secretDigest, sha256 } from '../crypto/handles.js';

/**
 * Why a request was refused: `invalid` bad input (including a client id that is a user's subject,
 * RFC 9068 §5); `conflict` the item exists already; `not_found` no such stored item; `read_only`
 * the item is defined in the config file, which the services never change; `precondition_failed`
 * the item changed since the version the caller named (its ETag, RFC 9110 §13.1.1); `forbidden`
 * the caller may not do this (an organization admin outside their organization, or changing their
 * own membership).
 */
export type AdminErrorCode = 'invalid' | 'conflict' | 'not_found' | 'read_only' | 'precondition_failed' | 'forbidden';

/** One problem of an input: the path of its field (`allowedScopes.0`, empty for the whole input) and what is wrong. */
export interface FieldProblem {
  path: string;
  message: string;
}

/**
 * The kinds of item a refusal names: a client, a user, a kind the resource service manages
 * (`ManagedKind` of admin/resources.ts), or an organization.
 */
export type ItemKind =
  | 'client'
  | 'user'
  | 'identity_resource'
  | 'api_scope'
  | 'api_resource'
  | 'identity_provider'
  | 'organization';

/** An item a refusal names: its kind and its name (client id, username, resource or organization name). */
export interface ItemRef {
  kind: ItemKind;
  name: string;
}

/**
 * The stable reason of a refusal, finer than its `AdminErrorCode`, for a caller that words the
 * refusal itself (the console, in the page's language) instead of showing the English message.
 * Each names what its `RefusalDetail` carries:
 * - `exists`: `item` exists already (config file or stored; for scopes, of either scope kind);
 * - `in_use`: `item` is still used by `users` (at most 5), which must drop it first;
 * - `built_in`: `item` is built into Sigil: it can be neither declared nor changed;
 * - `read_only`: `item` is managed by the config file;
 * - `changed`: `item` is not at the version the caller read (If-Match, or a concurrent change);
 * - `not_found`: `item` does not exist (as a stored item).
 * A refusal without one is worded from its code and field path alone.
 */
export type RefusalReason = 'exists' | 'in_use' | 'built_in' | 'read_only' | 'changed' | 'not_found';

/** A refusal's stable reason and the items it names. */
export interface RefusalDetail {
  reason: RefusalReason;
  item: ItemRef;
  /** For `in_use`: the items using `item`, at most 5. */
  users?: readonly ItemRef[];
}

/** A refused admin request; nothing was stored. */
export class AdminError extends Error {
  /**
   * @param code why it was refused
   * @param message what was wrong, for an operator (names the item, never a secret); English,
   *   the `detail` of /admin/v1's problem answer
   * @param field the input field at fault, when one is (`username`, `subjectId`, `claims`, `password`,
   *   `clientId`, `alg`)
   * @param problems each problem of an `invalid` input with its field path (`allowedScopes.0`), when known
   * @param detail the stable reason and the items it names, when the refusal has one
   */
  constructor(
    readonly code: AdminErrorCode,
    message: string,
    readonly field?: string,
    readonly problems?: readonly FieldProblem[],
    readonly detail?: RefusalDetail,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

/** An `invalid` AdminError naming `field` (a path within the input: `domains.2`). */
export function invalidField(field: string, message: string): AdminError {
  return new AdminError('invalid', `${field}: ${message}`, field, [{ path: field, message }]);
}

/** `body` parsed by `schema`. @throws AdminError `invalid` naming each problem by its field path. */
export function parseOrRefuse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const problems: FieldProblem[] = result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  throw new AdminError('invalid', `${problems[0]?.path}: ${problems[0]?.message}`, problems[0]?.path, problems);
}

/** Whether `value` is a JSON object (not null, not an array), as client metadata and user claims must be. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The problems of a config check (`ConfigError.problems`, `path: message` lines) as field problems
 * of one item of it: those under `own` (`clients[3]`) get their path within the item
 * (`allowedScopes.0`), others the whole line as message and an empty path.
 */
export function problemsOfItem(problems: readonly string[], own: string): FieldProblem[] {
  return problems.map((p) => {
    const colon = p.indexOf(': ');
    const path = colon < 0 ? '' : p.slice(0, colon);
    const message = colon < 0 ? p : p.slice(colon + 2);
    const within = path === own || path.startsWith(`${own}.`) || path.startsWith(`${own}[`);
    return within
      ? {
          path: path
            .slice(own.length)
            .replace(/\[(\d+)\]/g, '.$1')
            .replace(/^\./, ''),
          message,
        }
      : { path: '', message: p };
  });
}

/** The strong ETag (RFC 9110 §8.8.3) of an item saved as `text`, quotes included. */
export function etagOf(text: string): string {
  return `"${sha256(text).toString('base64url')}"`;
}

/**
 * Whether an `If-Match` value (RFC 9110 §13.1.1: `*` or a list of ETags) names `etag`; true when
 * there is none.
 */
export function ifMatchHolds(ifMatch: string | undefined, etag: string): boolean {
  return (
    ifMatch === undefined ||
    ifMatch === '*' ||
    ifMatch
      .split(',')
      .map((t) => t.trim())
      .includes(etag)
  );
}

/** A secret as stored: `sha256:` and the base64 of its SHA-256 digest, never the secret. */
export function storedSecret(secret: string): string {
  return `sha256:${secretDigest(secret).toString('base64')}`;
}
