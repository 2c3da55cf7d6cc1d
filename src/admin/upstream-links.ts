/**
 * The two ways a first upstream sign-in finds its local user (`UserAdmin.linkUpstream`): the one
 * stored user whose verified primary address the upstream vouches for, or a new user.
 */
import { MAX_USERNAME_LENGTH } from '../config/schema.js';
import { newId } from '../crypto/handles.js';
import type { ExternalLink, Store } from '../stores/types.js';
import { userCreated } from './webhook-data.js';

/**
 * The one stored user of `tenant` whose primary address is the claims' `email` and verified, when
 * the claims say `email_verified: true` (as the provider's preset reads it, federation/presets.ts);
 * else undefined: none, several, another tenant's, or an email the upstream does not vouch for.
 */
export async function verifiedOwner(
  store: Pick<Store, 'emails' | 'users'>,
  claims: Record<string, unknown>,
  tenant: string | null,
): Promise<string | undefined> {
  if (claims.email_verified !== true || typeof claims.email !== 'string') return undefined;
  const owners = new Set<string>();
  for (const e of await store.emails.findByValue(claims.email)) if (e.isPrimary && e.verified) owners.add(e.subjectId);
  const [only, ...more] = owners;
  if (only === undefined || more.length > 0) return undefined;
  const user = await store.users.findUserBySubject(only);
  return user && user.tenant === tenant ? only : undefined;
}

/**
 * Adds the user of a first upstream sign-in, without a password; their username, for display
 * only, is `<provider>:<sub>` when that fits and is free, else `<provider>:<local subject>`.
 * @returns the subject linked (the first one's when two first sign-ins raced).
 */
export async function addUpstreamUser(
  store: Pick<Store, 'users'>,
  link: ExternalLink,
  claims: Record<string, unknown>,
  tenant: string | null,
): Promise<string> {
  const fresh = newId();
  const readable = `${link.provider}:${link.upstreamSubject}`;
  const free =
    readable.length <= MAX_USERNAME_LENGTH && !(await store.users.findUserByUsername(readable, tenant ?? ''));
  const username = free ? readable : `${link.provider}:${fresh}`.slice(-MAX_USERNAME_LENGTH);
  const user = { subjectId: fresh, username, tenant, passwordHash: null, claims, isActive: true };
  const created = userCreated(fresh, { username, tenant, claims, isActive: true, externalId: null, emails: [] });
  return store.users.addExternalUser(link, user, created);
}
