/**
 * The pages behind links sent by mail (config `email`): "Forgot password?"
 * (`/account/forgot`, `/account/reset`), confirming an address (`/account/verify`) and
 * self-registration (`/account/register`, `/account/register/confirm`). The routes exist only
 * when their feature is configured; otherwise these paths are unknown (404).
 *
 * A link opened with GET only shows a form: the POST that consumes it carries the CSRF token, so a
 * mail scanner that fetches links spends none. Every POST is CSRF-checked and charged to the
 * caller's address (`email.requestsPerAddress` per hour, 429); a request for a mail gets the same
 * page whether the address or username is known or not, the mail going out in the background
 * (src/email/account-email.ts explains the limits).
 */
import type { Services } from '../services.js';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import { isEmailAddress } from '../users/email-address.js';
import { queryString, single } from '../http/fields.js';
import { originOf } from '../http/request.js';
import { addressQuotaKey, chargeQuota } from '../limits/request-quota.js';
import { OAuthError } from '../protocol/errors.js';
import type { Params } from '../protocol/params.js';
import { PASSWORD_PROBLEM_TEXTS, type PasswordProblem } from '../users/password-policy.js';
import { formOf, formRoute } from './forms.js';
import { EMAIL_TEMPLATES } from '../page-kit/email-pages.js';
import type { Messages } from '../page-kit/i18n.js';
import { browserOf, type BrowserServices } from '../interaction/browser.js';
import { language } from './language.js';
import type { ErrorPageServices } from './error-page.js';

import type { FormServices } from './forms.js';
/** The services this module uses. */
export type EmailPageServices = Pick<
  Services,
  'config' | 'email' | 'events' | 'hooks' | 'interactions' | 'issuer' | 'limiter' | 'pages'
> &
  BrowserServices &
  ErrorPageServices &
  FormServices;

/** Longest handle accepted from a link (ours are 43 characters). */
const MAX_TOKEN_LENGTH = 100;
/** Longest identifier accepted on the "forgot password" form. */
const MAX_IDENTIFIER_LENGTH = 320;

/** What a form page shows. */
interface FormData {
  titleKey: keyof Messages;
  introKey?: keyof Messages;
  values?: Record<string, string>;
  action: string;
  token?: string;
  /** The pending sign-in a reset started from, carried to the end (see `interactionOf`). */
  interaction?: string;
  fields: Field[];
  buttonKey: keyof Messages;
  errors?: string[];
}

/** The page helpers the routes of this module share. */
interface PageKit {
  form(reply: FastifyReply, lang: string, data: FormData, status?: number): FastifyReply;
  done(
    reply: FastifyReply,
    lang: string,
    titleKey: keyof Messages,
    textKey: keyof Messages,
    signIn?: boolean,
    status?: number,
    interaction?: string,
  ): FastifyReply;
  invalidLink(reply: FastifyReply, lang: string): FastifyReply;
  /** The options of the pages' form POST routes: the CSRF check (ui/forms.ts). */
  post: RouteShorthandOptions;
}

interface Field {
  name: string;
  type: 'text' | 'email' | 'password';
  labelKey: keyof Messages;
  autocomplete: string;
  value?: string;
  /** A hint under the field (the password policy), tied to it by `aria-describedby`. */
  hintKey?: keyof Messages;
}

/** Registers the pages of the configured email features (none without `email`). */
export function emailPages(app: FastifyInstance, ctx: EmailPageServices): void {
  const email = ctx.email;
  const config = ctx.config.email;
  if (!email || !config) return;
  for (const [name, template] of Object.entries(EMAIL_TEMPLATES)) ctx.pages.register(name, template);

  const kit: PageKit = {
    form: (reply, lang, data, status = 200) =>
      ctx.pages.send(reply, 'email-form', lang, { ...data, csrf: reply.generateCsrf() }, status),
    done: (reply, lang, titleKey, textKey, signIn = false, status = 200, interaction = undefined) =>
      ctx.pages.send(reply, 'email-done', lang, { titleKey, textKey, signIn, interaction }, status),
    invalidLink: (reply, lang) => kit.done(reply, lang, 'errorTitle', 'linkInvalid', false, 400),
    post: formRoute(app, ctx),
  };
  const { form, done, invalidLink, post } = kit;
  /** Charges the caller's address; false (with Retry-After set) when it is over its quota. */
  const addressAllows = async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    try {
      await chargeQuota(
        ctx.limiter,
        'email_quota',
        [{ key: `email:address:${addressQuotaKey(request.ip)}`, limit: config.requestsPerAddress }],
        3600,
      );
      return true;
    } catch (err) {
      if (!(err instanceof OAuthError) || err.status !== 429) throw err;
      reply.headers(err.headers);
      return false;
    }
  };
  const problemTexts = (lang: string, problems: readonly PasswordProblem[]) =>
    problems.map((p) => ctx.pages.text(lang, PASSWORD_PROBLEM_TEXTS[p]));

  if (config.passwordReset) {
    const forgotFields: Field[] = [
      { name: 'identifier', type: 'text', labelKey: 'emailOrUsername', autocomplete: 'username' },
    ];
    const forgotForm = (reply: FastifyReply, lang: string, errors?: string[], status = 200) =>
      form(
        reply,
        lang,
        {
          titleKey: 'forgotTitle',
          introKey: 'forgotIntro',
          action: '/account/forgot',
          fields: forgotFields,
          buttonKey: 'sendLink',
          errors,
        },
        status,
      );
    // Asked twice, with the policy stated, as on /account/password.
    const resetFields: Field[] = [
      {
        name: 'password',
        type: 'password',
        labelKey: 'newPassword',
        autocomplete: 'new-password',
        hintKey: 'passwordHint',
      },
      { name: 'confirm_password', type: 'password', labelKey: 'confirmPassword', autocomplete: 'new-password' },
    ];
    const resetForm = (
      reply: FastifyReply,
      lang: string,
      token: string,
      interaction: string | undefined,
      errors?: string[],
    ) =>
      form(
        reply,
        lang,
        {
          titleKey: 'resetTitle',
          action: '/account/reset',
          token,
          interaction,
          fields: resetFields,
          buttonKey: 'savePassword',
          errors,
        },
        errors ? 400 : 200,
      );

    app.get('/account/forgot', async (request, reply) =>
      form(reply, language(request), {
        titleKey: 'forgotTitle',
        introKey: 'forgotIntro',
        action: '/account/forgot',
        interaction: interactionOf(queryString(request, 'interaction')),
        fields: forgotFields,
        buttonKey: 'sendLink',
      }),
    );

    app.post('/account/forgot', post, async (request, reply) => {
      const lang = language(request);
      const body = formOf(request);
      if (!(await addressAllows(request, reply)))
        return forgotForm(reply, lang, [ctx.pages.text(lang, 'tooManyRequests')], 429);
      const identifier = (single(body, 'identifier') ?? '').trim();
      const interaction = interactionOf(single(body, 'interaction'));
      if (identifier.length > 0 && identifier.length <= MAX_IDENTIFIER_LENGTH)
        email.inBackground(() => email.requestReset(identifier, lang, interaction));
      return done(reply, lang, 'checkEmailTitle', 'checkEmail');
    });

    app.get('/account/reset', async (request, reply) => {
      const lang = language(request);
      const token = tokenOf(queryString(request, 'token'));
      const user = token ? await email.resetLinkUser(token) : undefined;
      // An inactive user's link shows no form: resetPassword would refuse it.
      if (!token || !user?.isActive) return invalidLink(reply, lang);
      return resetForm(reply, lang, token, interactionOf(queryString(request, 'interaction')));
    });

    app.post('/account/reset', post, async (request, reply) => {
      const lang = language(request);
      const body = formOf(request);
      const token = tokenOf(single(body, 'token'));
      const interaction = interactionOf(single(body, 'interaction'));
      const password = single(body, 'password') ?? '';
      const user = token ? await email.resetLinkUser(token) : undefined;
      if (!token || !user?.isActive) return invalidLink(reply, lang);
      // A mistyped confirmation changes nothing and keeps the link usable.
      if (password !== (single(body, 'confirm_password') ?? ''))
        return resetForm(reply, lang, token, interaction, [ctx.pages.text(lang, 'passwordMismatch')]);
      const outcome = await email.resetPassword(token, password);
      if (!outcome.ok && outcome.reason === 'invalid_link') return invalidLink(reply, lang);
      if (!outcome.ok) return resetForm(reply, lang, token, interaction, problemTexts(lang, outcome.problems));
      ctx.events.emit({
        name: 'password_reset',
        endpoint: 'reset',
        subjectId: outcome.subjectId,
        ...originOf(request),
      });
      // Back into the application's sign-in only while it is pending for this browser; a link
      // opened elsewhere, or after the sign-in expired, leads to the plain sign-in page.
      const pending = interaction && (await ctx.interactions.get(interaction, browserOf(ctx, request, reply)));
      return done(
        reply,
        lang,
        'passwordChangedTitle',
        'passwordResetDone',
        true,
        200,
        pending ? interaction : undefined,
      );
    });
  }

  confirmPages(
    app,
    kit,
    { path: '/account/verify', titleKey: 'confirmEmailTitle', buttonKey: 'confirm' },
    (t) => email.linkAddress(t, 'verify'),
    async (t) => ((await email.confirmAddress(t)) ? 'emailConfirmed' : undefined),
  );

  if (config.selfRegistration) {
    // The address only: the password is chosen on the page the mailed link opens, by whoever
    // reads that mailbox (account pre-hijacking: see AccountEmail.register).
    const registerForm = (reply: FastifyReply, lang: string, value: string, errors?: string[], status = 200) =>
      form(
        reply,
        lang,
        {
          titleKey: 'registerTitle',
          introKey: 'registerIntro',
          action: '/account/register',
          fields: [{ name: 'email', type: 'email', labelKey: 'emailAddress', autocomplete: 'email', value }],
          buttonKey: 'sendLink',
          errors,
        },
        status,
      );

    app.get('/account/register', async (request, reply) => registerForm(reply, language(request), ''));

    app.post('/account/register', post, async (request, reply) => {
      const lang = language(request);
      const body = formOf(request);
      if (!(await addressAllows(request, reply)))
        return registerForm(reply, lang, '', [ctx.pages.text(lang, 'tooManyRequests')], 429);
      const address = (single(body, 'email') ?? '').trim();
      if (!isEmailAddress(address)) return registerForm(reply, lang, '', [ctx.pages.text(lang, 'invalidEmail')], 400);
      // The preRegistration hook, before the link is sent: its denial's description on the form.
      if (ctx.hooks.has('preRegistration')) {
        const verdict = await ctx.hooks.preRegistration({ kind: 'user', email: address, ip: request.ip });
        if (!verdict.allowed) return registerForm(reply, lang, address, [verdict.description], 403);
      }
      email.inBackground(() => email.register(address, lang));
      return done(reply, lang, 'checkEmailTitle', 'checkEmail');
    });

    const passwordField: Field = {
      name: 'password',
      type: 'password',
      labelKey: 'password',
      autocomplete: 'new-password',
      hintKey: 'passwordHint',
    };
    const registration = {
      path: '/account/register/confirm',
      titleKey: 'registerTitle',
      buttonKey: 'createAccount',
      fields: [passwordField],
    } as const;
    confirmPages(
      app,
      kit,
      registration,
      (t) => email.linkAddress(t, 'register'),
      async (t, request, body, lang) => {
        const outcome = await email.confirmRegistration(t, single(body, 'password') ?? '');
        if (!outcome.ok)
          return outcome.reason === 'policy'
            ? { errors: problemTexts(lang, outcome.problems) }
            : outcome.reason === 'taken'
              ? { refusal: 'registerNameTaken', status: 409 }
              : undefined;
        ctx.events.emit({
          name: 'user_registered',
          endpoint: 'register',
          subjectId: outcome.subjectId,
          ...originOf(request),
        });
        return 'accountCreated';
      },
    );
  }
}

/** A page that confirms a link: where it is, its title and button, and the fields it asks for. */
interface ConfirmPage {
  path: string;
  titleKey: keyof Messages;
  buttonKey: keyof Messages;
  fields?: readonly Field[];
}

/**
 * A link that is confirmed with a button: GET shows the address, the page's fields and the button;
 * POST consumes the link (`confirm`, returning the text to show, undefined for a link that is not
 * live, errors to show on the form again with status 400, or a refusal to show with its status,
 * the link kept either way) and says what happened, with a way to sign in.
 * @param address the address a live link was sent to
 */
function confirmPages(
  app: FastifyInstance,
  kit: PageKit,
  page: ConfirmPage,
  address: (token: string) => Promise<string | undefined>,
  confirm: (
    token: string,
    request: FastifyRequest,
    body: Params,
    lang: string,
  ) => Promise<keyof Messages | { errors: string[] } | { refusal: keyof Messages; status: number } | undefined>,
): void {
  const { path, titleKey, buttonKey } = page;
  const fields = [...(page.fields ?? [])];
  const confirmForm = (reply: FastifyReply, lang: string, token: string, to: string, errors?: string[]) =>
    kit.form(
      reply,
      lang,
      {
        titleKey,
        introKey: 'confirmEmailIntro',
        values: { email: to },
        action: path,
        token,
        fields,
        buttonKey,
        errors,
      },
      errors ? 400 : 200,
    );
  app.get(path, async (request, reply) => {
    const lang = language(request);
    const token = tokenOf(queryString(request, 'token'));
    const to = token ? await address(token) : undefined;
    if (!token || !to) return kit.invalidLink(reply, lang);
    return confirmForm(reply, lang, token, to);
  });
  app.post(path, kit.post, async (request, reply) => {
    const lang = language(request);
    const body = formOf(request);
    const token = tokenOf(single(body, 'token'));
    const to = token ? await address(token) : undefined;
    const answer = token && to ? await confirm(token, request, body, lang) : undefined;
    if (!token || !to || !answer) return kit.invalidLink(reply, lang);
    if (typeof answer !== 'string' && 'refusal' in answer)
      return kit.done(reply, lang, 'errorTitle', answer.refusal, true, answer.status);
    if (typeof answer !== 'string') return confirmForm(reply, lang, token, to, answer.errors);
    return kit.done(reply, lang, titleKey, answer, true);
  });
}

/**
 * A pending sign-in's id from a link or form, when it has the shape of one (a random handle);
 * anything else is dropped, so nothing else reaches a mail or a page.
 */
function interactionOf(value: string | undefined): string | undefined {
  return value !== undefined && /^[A-Za-z0-9_-]{16,100}$/.test(value) ? value : undefined;
}

/** A handle from a link or form, when of a plausible length. */
function tokenOf(value: string | undefined): string | undefined {
  return value !== undefined && value.length > 0 && value.length <= MAX_TOKEN_LENGTH ? value : undefined;
}
