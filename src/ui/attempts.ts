/**
 * The failure limits (src/limits/failure-limiter.ts) as the sign-in pages meet them: before a
 * credential is checked on a page (password, one-time code, user code, passkey, security key),
 * the limiter may refuse; the page then answers with its own HTML and status 429.
 */
import type { FastifyReply } from 'fastify';
import type { Services } from '../services.js';
import type { OAuthError } from '../protocol/errors.js';
import type { CredentialAttempt } from '../limits/failure-limiter.js';

/** The services this module uses. */
export type AttemptsPageServices = Pick<Services, 'limiter'>;

/**
 * Runs `ctx.limiter.before(attempt)` (which may wait the identity-wide slow-down).
 * @returns true when the check may go on; false when the address or the identity and address
 *   pair is blocked: `Retry-After` (seconds) is then set on `reply`, and the caller renders its
 *   page with status 429 (OWASP ASVS 5.0 V6.3.1, RFC 6585 §4).
 * @throws whatever else the limiter throws (a counter store that fails).
 */
export async function limiterAllows(
  ctx: AttemptsPageServices,
  reply: FastifyReply,
  attempt: CredentialAttempt,
): Promise<boolean> {
  const refusal = await ctx.limiter.refusal(attempt);
  if (refusal) refused(reply, refusal);
  return refusal === undefined;
}

/**
 * Sets the headers of a refusal of the failure limits (`Retry-After`) on a page's reply; the caller renders
 * with status 429.
 */
export function refused(reply: FastifyReply, refusal: OAuthError): void {
  reply.headers(refusal.headers);
}
