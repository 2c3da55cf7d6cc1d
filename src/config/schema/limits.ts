/**
 * Limits on what callers may do per window: failed credential checks (`rateLimits`), stored
 * requests of callers who have not signed in (`pendingLimits`), and DPoP proofs (`dpop`).
 */
import * as z from 'zod';
import { lifetime } from './field-kinds.js';

/** `rateLimits`: failed credential checks tolerated per identity and address, and the slow-down after them. */
export const rateLimits = z
  .strictObject({
    maxFailures: z.number().int().positive().default(20).meta({
      description:
        'Failed checks tolerated per identity and address in one window; then that address gets 429 for that identity',
    }),
    windowSeconds: lifetime.default(60).meta({ description: 'The counting window, seconds' }),
    addressMaxFailures: z.number().int().positive().optional().meta({
      description: 'Failed checks per address in one window, whatever the identity; then 429. Default 5 × maxFailures',
    }),
    identitySlowDownAfter: z.number().int().positive().optional().meta({
      description:
        'Failed checks per identity in one window from all addresses before every check for it waits (100 ms, doubling per further failure); never a refusal. Default 5 × maxFailures',
    }),
    maxDelaySeconds: z.number().int().min(0).max(60).default(5).meta({ description: 'The longest such wait, seconds' }),
  })
  .transform((r) => ({
    ...r,
    addressMaxFailures: r.addressMaxFailures ?? 5 * r.maxFailures,
    identitySlowDownAfter: r.identitySlowDownAfter ?? 5 * r.maxFailures,
  }));

/**
 * Limits on what callers who have not authenticated can make Sigil store (OWASP API4:2023): each
 * counts stored requests per key in a fixed window of `windowSeconds`, so the live rows per key
 * stay under twice the limit while their lifetime is at most one window.
 */
export const pendingLimits = z.strictObject({
  windowSeconds: lifetime
    .default(600)
    .meta({ description: 'The counting window, seconds (the lifetime of a pending interaction)' }),
  interactionsPerBrowser: z.number().int().positive().default(30).meta({
    description: 'Pending authorization requests (waiting for login or consent) one browser may start per window',
  }),
  interactionsPerAddress: z
    .number()
    .int()
    .positive()
    .default(300)
    .meta({ description: 'Pending authorization requests one address (an IPv6 /64) may start per window' }),
  deviceAuthorizationsPerAddress: z.number().int().positive().default(30).meta({
    description: 'Device authorizations one address (an IPv6 /64) may start per window',
    spec: 'RFC 8628 §3.1',
  }),
  deviceAuthorizationsPerClient: z.number().int().positive().default(1000).meta({
    description: 'Device authorizations one client may start per window, from all addresses together',
    spec: 'RFC 8628 §3.1',
  }),
  backchannelRequestsPerClient: z.number().int().positive().default(1000).meta({
    description: 'CIBA requests (/connect/ciba) one client may start per window',
    spec: 'OpenID CIBA Core 1.0 §7',
  }),
  backchannelRequestsPerUserAndClient: z.number().int().positive().default(10).meta({
    description:
      "CIBA requests one client may make for one user per window: no client floods a user with requests or mails, and none uses up another client's",
    spec: 'OpenID CIBA Core 1.0 §7',
  }),
  dpopProofsPerAddress: z.number().int().positive().default(600).meta({
    description:
      "DPoP proofs of public clients one address (an IPv6 /64) may send to the token endpoint per window (each proof's jti is a stored row)",
    spec: 'RFC 9449 §11.1',
  }),
});

/** Default `pendingLimits`. */
export const PENDING_LIMITS_DEFAULTS = {
  windowSeconds: 600,
  interactionsPerBrowser: 30,
  interactionsPerAddress: 300,
  deviceAuthorizationsPerAddress: 30,
  deviceAuthorizationsPerClient: 1000,
  backchannelRequestsPerClient: 1000,
  backchannelRequestsPerUserAndClient: 10,
  dpopProofsPerAddress: 600,
};

/** Default `dpop` settings. */
export const DPOP_DEFAULTS = { proofWindowSeconds: 300, requireNonce: false, nonceLifetimeSeconds: 300 };

/**
 * DPoP (RFC 9449) at the token endpoint and userinfo: how far a proof's `iat` may be from the
 * server's clock, and server-provided nonces (§8).
 */
export const dpop = z
  .strictObject({
    proofWindowSeconds: z.number().int().min(1).max(3600).default(DPOP_DEFAULTS.proofWindowSeconds).meta({
      description: "Seconds a proof's iat may lie before or after now; its jti is kept this long",
      spec: 'RFC 9449 §11.1',
    }),
    requireNonce: z.boolean().default(DPOP_DEFAULTS.requireNonce).meta({
      description: 'Token requests must carry a nonce this server issued (use_dpop_nonce, DPoP-Nonce)',
      spec: 'RFC 9449 §8',
    }),
    nonceLifetimeSeconds: z.number().int().min(2).max(86400).default(DPOP_DEFAULTS.nonceLifetimeSeconds).meta({
      description: 'Seconds a server nonce is accepted; a fresh one is handed out after half of it',
      spec: 'RFC 9449 §8',
    }),
  })
  .default(DPOP_DEFAULTS)
  .meta({
    description: 'DPoP at the token endpoint and userinfo: the proof window and server nonces',
    spec: 'RFC 9449',
  });
