/**
 * Where a sign-in that started at one of Sigil's own account pages continues afterwards: the
 * login page's `return` value (query or hidden form field), kept through the second step in the
 * pending sign-in. Only fixed shapes of paths below the issuer are taken, never a URL, so the
 * value cannot send a browser anywhere else (no open redirect).
 */

/** The account page itself. */
export const ACCOUNT_PATH = '/account';
/** The page where a user answers applications' requests (CIBA, `backchannel-requests.ts`). */
const REQUESTS_PATH = '/account/requests';
/** An invitation's link (`invitations.ts`): its token is base64url, at most 100 characters. */
const INVITATION_RETURN = /^\/account\/invitations\/[A-Za-z0-9_-]{1,100}$/;

/**
 * `value` when it is a path a sign-in may return to (`/account`, `/account/requests` or an invitation's link), else
 * undefined (the sign-in then ends on the "signed in" page).
 */
export function returnPath(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value === ACCOUNT_PATH || value === REQUESTS_PATH || INVITATION_RETURN.test(value) ? value : undefined;
}

/** The login page's path that returns to `path` (one `returnPath` takes) after the sign-in. */
export function signInReturningTo(path: string): string {
  return `/account/login?return=${encodeURIComponent(path)}`;
}
