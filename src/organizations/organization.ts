/**
 * An organization as Sigil holds it (B2B: one issuer, many customer organizations): its settings,
 * where it is defined, and its stable id, the `org_id` tokens will carry.
 *
 * The id of a config-file organization is derived from its name (`configOrganizationId`): every
 * node computes the same one without writing to the store (several nodes may start at once, a
 * read-only replica can start, a config moved to a fresh store keeps its ids), and it stays while
 * the name does, which is the config-file entry's identity. A stored organization's id is random
 * (`newOrganizationId`), made once at its creation and kept in the store. Both have the same
 * shape, `org_` and 22 base64url characters (128 bits), so a client cannot tell them apart and
 * should not try: only the issuer's own ids are stable, never a name.
 */
import type { OrganizationConfig } from '../config/schema.js';
import { newId, sha256 } from '../crypto/handles.js';

/** How a user becomes a member (config `organizations[].membership`). */
export type Membership = OrganizationConfig['membership'];

/** An organization in force or shown: its stable id, its settings, and where it is defined. */
export interface Organization {
  /** The stable id (`org_id`): `org_` and 22 base64url characters; never the name. */
  id: string;
  name: string;
  displayName: string;
  /** Lower-cased DNS names, each an email domain of this organization only. */
  domains: readonly string[];
  /** Names of upstream identity providers its users sign in with. */
  identityProviders: readonly string[];
  membership: Membership;
  /** `config`: the config file's, read-only; `store`: managed at run time. */
  source: 'config' | 'store';
}

/** The id of the config-file organization named `name`: `org_` and 128 bits of SHA-256 of the name. */
export function configOrganizationId(name: string): string {
  return `org_${sha256(`sigil organization ${name}`).subarray(0, 16).toString('base64url')}`;
}

/** A new stored organization's id: `org_` and 128 random bits. */
export function newOrganizationId(): string {
  return `org_${newId()}`;
}

/** A config-file organization as held. */
export function configOrganization(o: OrganizationConfig): Organization {
  return { id: configOrganizationId(o.name), ...o, source: 'config' };
}
