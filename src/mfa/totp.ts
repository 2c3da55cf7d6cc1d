/**
 * Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP) with `otpauth`: SHA-1, 6 digits,
 * 30-second steps, the defaults every authenticator app understands. A code is accepted one step
 * either side of now (RFC 6238 §5.2 network delay) and only once: the factor's stored counter is
 * the last time step used, advanced by one conditional update, so a replayed code, or an older
 * one after a newer, is refused (RFC 6238 §5.2 "MUST NOT accept the second attempt").
 */
import { Secret, TOTP } from 'otpauth';
import { openJson, sealJson } from '../keys/keys.js';
import type { FactorStore, StoredFactor } from '../stores/types.js';

/** The time step, seconds (RFC 6238 §4.1 X). */
export const TOTP_PERIOD = 30;
/** Steps accepted either side of the current one. */
export const TOTP_WINDOW = 1;

/** A new random secret of 160 bits (RFC 4226 §4 R6 recommends 160), as base32 text. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/**
 * The `otpauth://totp/...` URI authenticator apps read (Key Uri Format), and its QR code as a
 * PNG data URL rendered on the server.
 * @param issuer config `mfa.totpIssuer`
 * @param account the user's name shown in the app
 */
export async function totpProvisioning(
  issuer: string,
  account: string,
  secret: string,
): Promise<{ uri: string; qr: string }> {
  const uri = new TOTP({ issuer, label: account, secret: Secret.fromBase32(secret), period: TOTP_PERIOD }).toString();
  // Loaded at the first enrollment, not at start, which it would slow down.
  const { default: QRCode } = await import('qrcode');
  return { uri, qr: await QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 2, width: 240 }) };
}

/** Seals a base32 secret for the store (JWE under `SIGIL_DATA_KEY` when set). */
export function sealTotpSecret(secret: string, dataKey: Uint8Array | undefined): Promise<string> {
  return sealJson(JSON.stringify({ totp: secret }), dataKey);
}

/**
 * Opens a sealed secret.
 * @throws Error when it is encrypted and the data key is missing or another one.
 */
export async function openTotpSecret(sealed: string, dataKey: Uint8Array | undefined): Promise<string> {
  return (JSON.parse(await openJson(sealed, dataKey, 'TOTP secrets')) as { totp: string }).totp;
}

/** A code as typed: spaces removed; undefined unless exactly 6 digits. */
export function normaliseTotpCode(input: string): string | undefined {
  const code = input.replace(/\s+/g, '');
  return /^[0-9]{6}$/.test(code) ? code : undefined;
}

/**
 * The time step a code belongs to, within ±`TOTP_WINDOW` of `now`, or undefined when it matches
 * none (RFC 6238 §4, §5.2).
 * @param now Unix seconds
 */
export function totpStep(secret: string, code: string, now: number): number | undefined {
  const delta = TOTP.validate({
    token: code,
    secret: Secret.fromBase32(secret),
    period: TOTP_PERIOD,
    timestamp: now * 1000,
    window: TOTP_WINDOW,
  });
  if (delta === null) return undefined;
  return TOTP.counter({ period: TOTP_PERIOD, timestamp: now * 1000 }) + delta;
}

/**
 * Checks a code against one stored TOTP factor and spends its time step atomically.
 * @returns true when the code is valid now and its step (or a later one) was not used before.
 */
export async function useTotp(
  store: FactorStore,
  factor: StoredFactor,
  code: string,
  now: number,
  dataKey: Uint8Array | undefined,
): Promise<boolean> {
  const secret = await openTotpSecret(String(factor.data.secret), dataKey);
  const step = totpStep(secret, code, now);
  if (step === undefined) return false;
  return store.advanceFactorCounter(factor.id, step, now);
}
