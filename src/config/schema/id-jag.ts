/**
 * The config of the Identity Assertion JWT Authorization Grant (ID-JAG,
 * draft-ietf-oauth-identity-assertion-authz-grant), both roles: a client's `idJagAudiences` (the
 * resource authorization servers it may ask Sigil for an ID-JAG for, and its client id at each),
 * and the top-level `trustedIdentityIssuers` (the enterprise identity providers whose ID-JAGs Sigil
 * redeems with the JWT bearer grant, RFC 7523 §2.1).
 */
import * as z from 'zod';
import { httpsOrLoopback, nonEmpty } from './field-kinds.js';

/** Most audiences one client may ask ID-JAGs for. */
export const MAX_ID_JAG_AUDIENCES = 50;
/** Most trusted identity issuers. */
export const MAX_TRUSTED_IDENTITY_ISSUERS = 50;

/** One resource authorization server a client may ask an ID-JAG for. */
export const idJagAudience = z.strictObject({
  issuer: httpsOrLoopback.max(2048).meta({
    description:
      "The resource authorization server's issuer identifier (RFC 8414 §2): the token exchange's audience and the ID-JAG's aud",
    spec: 'draft-ietf-oauth-identity-assertion-authz-grant §"Token Exchange"',
  }),
  clientId: nonEmpty.max(255).meta({
    description: "The client's client_id at that server, the ID-JAG's client_id claim (registered there out of band)",
    spec: 'draft-ietf-oauth-identity-assertion-authz-grant §"Cross-Domain Client ID Handling"',
  }),
});

/** The `idJagAudiences` client field: unique issuers. */
export const idJagAudiences = z
  .array(idJagAudience)
  .max(MAX_ID_JAG_AUDIENCES)
  .default([])
  .refine((list) => new Set(list.map((a) => a.issuer)).size === list.length, 'two entries have the same issuer')
  .meta({
    description: `Resource authorization servers this client may ask an ID-JAG for by token exchange (requested_token_type urn:ietf:params:oauth:token-type:id-jag), with its client id at each; any other audience is invalid_target. Confidential clients only; at most ${MAX_ID_JAG_AUDIENCES}`,
    spec: 'draft-ietf-oauth-identity-assertion-authz-grant; RFC 8693 §2.2.2',
  });

/** How the subject of a trusted issuer's ID-JAG becomes a local user; no user is ever created. */
export const SUBJECT_MAPPINGS = ['link', 'email'] as const;

/** One enterprise identity provider whose ID-JAGs Sigil redeems. */
export const trustedIdentityIssuer = z.strictObject({
  issuer: httpsOrLoopback.max(2048).meta({
    description: "The identity provider's issuer identifier: an ID-JAG's iss, compared exactly",
    spec: 'RFC 8414 §2',
  }),
  jwksUri: httpsOrLoopback.max(2048).meta({
    description:
      'Where its signing keys are (its jwks_uri): fetched under the SSRF guard (5 s, 64 KB, no redirects, never from private or other special-use addresses; loopback only with clientIdMetadataDocuments.allowLoopback), cached 10 minutes, fetched again for an unknown kid at most once a minute',
    spec: 'RFC 7517 §5',
  }),
  subjectMapping: z.enum(SUBJECT_MAPPINGS).meta({
    description:
      "link: the local user an upstream sign-in linked to (issuer, sub), through the identityProviders whose authority is this issuer; email: the one stored user whose verified primary address is the ID-JAG's email, which must say email_verified true. No user is created; an unmapped subject is invalid_grant",
  }),
});

/** The top-level `trustedIdentityIssuers`: unique issuers. */
export const trustedIdentityIssuers = z
  .array(trustedIdentityIssuer)
  .max(MAX_TRUSTED_IDENTITY_ISSUERS)
  .default([])
  .refine((list) => new Set(list.map((t) => t.issuer)).size === list.length, 'two entries have the same issuer')
  .meta({
    description: `Enterprise identity providers whose ID-JAGs clients redeem here with grant_type urn:ietf:params:oauth:grant-type:jwt-bearer (in their allowedGrantTypes). Never Sigil's own issuer. At most ${MAX_TRUSTED_IDENTITY_ISSUERS}`,
    spec: 'draft-ietf-oauth-identity-assertion-authz-grant §"Access Token Request"; RFC 7523 §2.1',
  });

/** A trusted identity issuer, defaults filled in. */
export type TrustedIdentityIssuer = z.output<typeof trustedIdentityIssuer>;
