/**
 * The new password a user must choose at a sign-in with a temporary password an administrator
 * set (`StoredUser.passwordChangeRequired`, set in the console): after the password proved right,
 * the sign-in waits, bound to the browser, as a pending sign-in marked `passwordChange`
 * (`PendingSignIn`), which no second step may finish; `/account/password/required` asks for the
 * new password twice under the password policy (the self-service page's form), stores it, which
 * clears the flag, and only then goes on as the sign-in would have: the second step, else the
 * session and the pending authorization request. No session, code or token exists before.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf } from '../interaction/browser.js';
import { single } from '../http/fields.js';
import { originOf } from '../http/request.js';
import type { Messages } from '../page-kit/i18n.js';
import type { PasswordChange } from '../users/account.js';
import { PASSWORD_PROBLEM_TEXTS } from '../users/password-policy.js';
import type { PendingSignIn } from '../mfa/factors.js';
import type { User } from '../users/user.js';
import { type AccountMfaPageServices, secondStepAfterPassword } from './account-mfa.js';
import { expiredPage } from './error-page.js';
import { formOf, formRoute } from './forms.js';
import { language } from './language.js';
import { continueAfterSignIn, type SignInPageServices } from './sign-in.js';

/** The services this module uses. */
export type PasswordChangeRequiredServices = Pick<Services, 'account' | 'interactions' | 'mfa' | 'pages' | 'users'> &
  AccountMfaPageServices &
  SignInPageServices;

/** The page's path. */
const PATH = '/account/password/required';

/**
 * After the password of `first` proved right: when it is a temporary one (`user`, as the password
 * check found them), saves the sign-in as waiting for a new password and redirects to the page
 * that asks for it.
 * @returns whether it answered (the redirect); false when the password is the user's own and the
 *   sign-in goes on. A boolean, not the reply: an async function's returned reply, a thenable,
 *   would resolve to undefined.
 */
export async function passwordChangeStep(
  ctx: PasswordChangeRequiredServices,
  request: FastifyRequest,
  reply: FastifyReply,
  first: PendingSignIn,
  user: User,
): Promise<boolean> {
  if (!user.passwordChangeRequired) return false;
  await ctx.mfa.savePending(browserOf(ctx, request, reply), { ...first, passwordChange: true });
  reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${PATH}`, 303);
  return true;
}

/** Registers `/account/password/required`. */
export function passwordChangeRequiredPages(app: FastifyInstance, ctx: PasswordChangeRequiredServices): void {
  /**
   * The form; its answer ends at the client when the sign-in is for an authorization request
   * (`Pages.send`'s `leadsToClient`: CSP form-action covers the redirects).
   */
  const page = async (
    request: FastifyRequest,
    reply: FastifyReply,
    pending: PendingSignIn,
    change?: PasswordChange,
  ) => {
    const interaction =
      pending.interaction === undefined
        ? undefined
        : await ctx.interactions.get(pending.interaction, browserOf(ctx, request, reply));
    const lang = language(request, interaction?.request.uiLocales);
    const t = (key: keyof Messages) => ctx.pages.text(lang, key);
    const error =
      change?.outcome === 'weak'
        ? change.problems.map((p) => t(PASSWORD_PROBLEM_TEXTS[p])).join(' ')
        : change?.outcome === 'mismatch'
          ? t('passwordMismatch')
          : undefined;
    return ctx.pages.send(
      reply,
      'account-password',
      lang,
      { csrf: reply.generateCsrf(), required: true, error },
      error ? 400 : 200,
      interaction?.request.target !== undefined,
    );
  };

  app.get(PATH, async (request, reply) => {
    const pending = await ctx.mfa.pendingPasswordChange(browserOf(ctx, request, reply));
    return pending ? page(request, reply, pending) : expiredPage(ctx, request, reply);
  });

  app.post(PATH, formRoute(app, ctx), async (request, reply) => {
    const browser = browserOf(ctx, request, reply);
    const pending = await ctx.mfa.pendingPasswordChange(browser);
    if (!pending) return expiredPage(ctx, request, reply);
    const body = formOf(request);
    const change = await ctx.account.replaceTemporaryPassword(
      pending.subjectId,
      { password: single(body, 'new_password') ?? '', confirm: single(body, 'confirm_password') ?? '' },
      originOf(request),
    );
    if (change.outcome === 'weak' || change.outcome === 'mismatch') return page(request, reply, pending, change);
    // Of two concurrent submissions one goes on; a flag cleared meanwhile ends the sign-in too.
    if (change.outcome !== 'changed' || !(await ctx.mfa.finishPending(browser)))
      return expiredPage(ctx, request, reply);
    const { passwordChange: _done, ...first } = pending;
    const id = first.interaction;
    const interaction = id === undefined ? undefined : await ctx.interactions.get(id, browser);
    if (id !== undefined && !interaction) return expiredPage(ctx, request, reply);
    if (await secondStepAfterPassword(ctx, request, reply, first, interaction)) return reply;
    const user = await ctx.users.findBySubject(first.subjectId);
    if (!user?.isActive) return expiredPage(ctx, request, reply);
    return continueAfterSignIn(
      ctx,
      request,
      reply,
      user,
      first.amr,
      id && interaction ? { id, interaction } : undefined,
      language(request, interaction?.request.uiLocales),
      first.returnTo,
    );
  });
}
