/**
 * Organizations (B2B: one issuer, many customer organizations, as Auth0 and Keycloak 26 model
 * them): one entry of the config's `organizations`, which is also the body of a stored one
 * (/admin/v1/organizations), and the bounds and spellings of its fields.
 */
import { domainToASCII } from 'node:url';
import * as z from 'zod';

/** The longest organization name, characters (a DNS label's bound: it may name a host some day). */
export const MAX_ORGANIZATION_NAME = 63;
/** The longest display name, characters. */
export const MAX_ORGANIZATION_DISPLAY_NAME = 200;
/** The most email domains of one organization. */
export const MAX_ORGANIZATION_DOMAINS = 50;
/** The most identity providers of one organization. */
export const MAX_ORGANIZATION_PROVIDERS = 20;
/** The most organizations of the config file (stored ones are not counted). */
export const MAX_CONFIG_ORGANIZATIONS = 1000;
/** The longest domain, characters (RFC 1035 §2.3.4: 255 octets on the wire, 253 written). */
export const MAX_DOMAIN_LENGTH = 253;

/**
 * An organization name: lower-case letters, digits, `-` and `_`, starting with a letter or digit.
 * One spelling per organization (no case variants), as it appears in paths and, later, in
 * `organization=<name>`.
 */
export const ORGANIZATION_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/**
 * A DNS name as written after `normalizeDomain`: dot-separated labels of 1 to 63 lower-case
 * letters, digits and inner hyphens (RFC 1035 §2.3.1, RFC 1123 §2.1), at least two of them, the
 * last starting with a letter (so no IPv4 address passes).
 */
export const DNS_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The domain `value` names, in one spelling: lower-cased, an internationalized name as its
 * A-labels (`bücher.example` → `xn--bcher-kva.example`, UTS #46 as WHATWG URL does it).
 * @returns the domain, or undefined when `value` is no DNS name (`DNS_NAME`) of at most
 *   MAX_DOMAIN_LENGTH characters: an address, a wildcard, a trailing dot, a port or a path.
 */
export function normalizeDomain(value: string): string | undefined {
  if (value.length > MAX_DOMAIN_LENGTH) return undefined;
  const ascii = domainToASCII(value);
  return ascii.length <= MAX_DOMAIN_LENGTH && DNS_NAME.test(ascii) ? ascii : undefined;
}

/** How a user becomes a member of an organization (used by the sign-in of a later release). */
export const MEMBERSHIP_KINDS = ['invite', 'domain', 'open'] as const;

/** An email domain of an organization, normalized (`normalizeDomain`). */
const domain = z
  .string()
  .max(MAX_DOMAIN_LENGTH)
  .transform((value, ctx) => {
    const normalized = normalizeDomain(value);
    if (normalized === undefined)
      ctx.addIssue({ code: 'custom', message: 'must be a DNS name such as acme.example (no address, port or path)' });
    return normalized ?? value;
  });

/** One entry of `organizations` (also a stored organization, /admin/v1/organizations). */
export const organization = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(MAX_ORGANIZATION_NAME)
      .regex(ORGANIZATION_NAME, 'lower-case letters, digits, - and _ only, starting with a letter or digit')
      .meta({
        description: `The organization's name, in paths and in organization=<name>: 1 to ${MAX_ORGANIZATION_NAME} lower-case letters, digits, - and _, starting with a letter or digit; unique`,
      }),
    displayName: z
      .string()
      .min(1)
      .max(MAX_ORGANIZATION_DISPLAY_NAME)
      .regex(/^[^\u0000-\u001f\u007f]+$/, 'control characters are not allowed')
      .meta({ description: `Shown to its users, 1 to ${MAX_ORGANIZATION_DISPLAY_NAME} characters` }),
    domains: z
      .array(domain)
      .max(MAX_ORGANIZATION_DOMAINS)
      .default([])
      .meta({
        description: `Its email domains (acme.example), at most ${MAX_ORGANIZATION_DOMAINS}, stored lower-cased (an internationalized name as its xn-- form); a domain belongs to one organization at most`,
      }),
    identityProviders: z
      .array(z.string().min(1).max(100))
      .max(MAX_ORGANIZATION_PROVIDERS)
      .default([])
      .meta({
        description: `Names of upstream identity providers its users sign in with, at most ${MAX_ORGANIZATION_PROVIDERS}: the config file's identityProviders (a stored organization may also name a stored provider)`,
      }),
    membership: z.enum(MEMBERSHIP_KINDS).default('invite').meta({
      description:
        'How users become members: invite (added by an administrator), domain (also users whose verified email is at one of its domains, or who sign in through one of its identity providers), open (any user who signs in to it)',
    }),
  })
  .superRefine((o, ctx) => {
    for (const member of ['domains', 'identityProviders'] as const)
      o[member].forEach((value, i) => {
        if (o[member].indexOf(value) !== i)
          ctx.addIssue({ code: 'custom', path: [member, i], message: `"${value}" is listed twice` });
      });
  });

/** An organization's settings, defaults filled in and domains normalized. */
export type OrganizationConfig = z.output<typeof organization>;
