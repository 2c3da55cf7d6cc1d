/**
 * Checking a second factor's code at the second sign-in step: a 6-digit code is tried against
 * the user's TOTP factors (RFC 6238), anything else as a recovery code. Both spend what they use
 * atomically (a time step, a code), so the same code never counts twice.
 */
import type { CredentialAttempt } from '../limits/failure-limiter.js';
import type { MfaService } from './factors.js';
import { RECOVERY_KIND, useRecoveryCode } from './recovery.js';
import { normaliseTotpCode, useTotp } from './totp.js';

/**
 * The failure limiter's view of a one-time code check (config `rateLimits`): the user is the
 * identity, counted per address and from every address (a 6-digit code is guessable).
 */
export function mfaAttempt(address: string, subjectId: string): CredentialAttempt {
  return { address, identity: `mfa:${subjectId}`, identityWide: true };
}

/**
 * Verifies a typed code for the user and spends it.
 * @param input the form's `code`, at most 100 characters
 * @param now Unix seconds
 * @returns the factor kind that accepted it (`totp`, `recovery_code`), or undefined for a wrong,
 *   replayed or out-of-window code.
 */
export async function verifySecondFactor(
  mfa: MfaService,
  subjectId: string,
  input: string,
  now: number,
): Promise<string | undefined> {
  if (input.length === 0 || input.length > 100) return undefined;
  const totp = normaliseTotpCode(input);
  if (totp !== undefined) {
    for (const factor of await mfa.factors.listFactors(subjectId, ['totp']))
      if (await useTotp(mfa.factors, factor, totp, now, mfa.dataKey)) return 'totp';
    return undefined;
  }
  return (await useRecoveryCode(mfa.factors, subjectId, input, now)) ? RECOVERY_KIND : undefined;
}
