/**
 * Multi-factor test helpers shared by the HTTP and browser tests: TOTP codes computed here with
 * otpauth (independently of Sigil's code paths), and enrollment through Sigil's own pages.
 */
import { expect } from 'vitest';
import { Secret, TOTP } from 'otpauth';
import { type Browser, input, unescapeHtml } from './authorize-helpers.js';

/**
 * The TOTP code of a base32 secret `stepOffset` 30-second steps from now (RFC 6238, SHA-1, 6 digits).
 */
export function totpCode(secret: string, stepOffset = 0): string {
  return TOTP.generate({
    secret: Secret.fromBase32(secret.replace(/\s+/g, '')),
    period: 30,
    timestamp: Date.now() + stepOffset * 30_000,
  });
}

/** The key shown as text on the enrollment page (`#totp-secret`), spaces removed. */
export function secretOnPage(html: string): string {
  const m = /id="totp-secret"[^>]*>([^<]+)</.exec(html);
  if (!m) throw new Error(`no TOTP key on page:\n${html}`);
  return unescapeHtml(m[1] ?? '').replace(/\s+/g, '');
}

/** The recovery codes listed on the page shown once after enrollment. */
export function recoveryCodesOnPage(html: string): string[] {
  return [...html.matchAll(/<li><code>([a-z0-9-]+)<\/code><\/li>/g)].map((m) => m[1] ?? '');
}

/**
 * Enrolls an authenticator app from /account for the browser's (freshly signed-in) user, confirming
 * with the current step's code. Returns the secret and the ten recovery codes.
 */
export async function enrollTotp(b: Browser): Promise<{ secret: string; recoveryCodes: string[] }> {
  const page = await b.get('/account/totp');
  expect(page.status, page.body).toBe(200);
  const secret = secretOnPage(page.body);
  const done = await b.post('/account/totp', {
    csrf_token: input(page.body, 'csrf_token'),
    code: totpCode(secret),
    button: 'confirm',
  });
  expect(done.status, done.body).toBe(200);
  const recoveryCodes = recoveryCodesOnPage(done.body);
  expect(recoveryCodes).toHaveLength(10);
  return { secret, recoveryCodes };
}

/** Whether a step is the second-factor page. */
export function isMfaPage(step: { status: number; body: string }): boolean {
  return step.status === 200 && step.body.includes('action="/account/mfa"');
}

/** Submits a code on the second-factor page (already fetched) with its hidden fields, following redirects on the server. */
export async function submitCode(
  b: Browser,
  page: { body: string },
  code: string,
): Promise<Awaited<ReturnType<Browser['get']>>> {
  const fields: Record<string, string> = { csrf_token: input(page.body, 'csrf_token'), code, button: 'verify' };
  const m = /name="interaction" value="([^"]*)"/.exec(page.body);
  if (m) fields.interaction = unescapeHtml(m[1] ?? '');
  const back = /name="return" value="([^"]*)"/.exec(page.body);
  if (back) fields.return = unescapeHtml(back[1] ?? '');
  return b.follow(await b.post('/account/mfa', fields));
}
