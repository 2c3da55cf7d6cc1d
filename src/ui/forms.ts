/**
 * The form POSTs of the pages: their body, and the route options that check a form (same-origin
 * `Origin`, a valid CSRF token: ui/csrf.ts, RFC 6749 §10.12) before its handler runs. A refused
 * form gets the "form has expired" answer (403) and its handler never runs, so each route
 * declares the check once, in its options, and its body deals only with forms that passed.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { Services } from '../services.js';
import { single } from '../http/fields.js';
import { sendOAuthError } from '../http/request.js';
import { Params } from '../protocol/params.js';
import { checkCsrf } from './csrf.js';
import { formExpiredError, formExpiredPage } from './error-page.js';
import { language, pendingLanguage } from './language.js';

import type { ErrorPageServices } from './error-page.js';
import type { LanguagePageServices } from './language.js';
/** The services this module uses. */
export type FormServices = Pick<Services, 'issuer'> & ErrorPageServices & LanguagePageServices;

/**
 * How a route answers a refused form:
 * - `page`: the error page in the request's language (query `ui_locales`, else `Accept-Language`);
 * - `page-in-form-locales`: the same, in the language of the form's own `ui_locales` field (the
 *   sign-in forms carry the pending request's);
 * - `page-in-pending-language`: the same, in the language of the pending request the form's
 *   `interaction` field names (OIDC Core §3.1.2.1);
 * - `json`: a JSON error body (`invalid_request`, 403), for the routes a page's script fetches.
 */
export type FormRefusal = 'page' | 'page-in-form-locales' | 'page-in-pending-language' | 'json';

/**
 * The options of a form POST route: a `preHandler` that checks the form and answers a refused one
 * itself (status 403, see `FormRefusal`), so that the handler runs only for a form that passed.
 * @param app the Fastify instance the pages' CSRF plugin is registered in
 */
export function formRoute(
  app: FastifyInstance,
  ctx: FormServices,
  refusal: FormRefusal = 'page',
): RouteShorthandOptions {
  const origin = new URL(ctx.issuer).origin;
  return {
    preHandler: async (request, reply) => {
      if (checkCsrf(app, request, reply, origin)) return;
      await refuse(ctx, request, reply, refusal);
      return reply;
    },
  };
}

/** The form body of a POST, or an empty one when it had none (or was not a form). */
export function formOf(request: FastifyRequest): Params {
  return request.body instanceof Params ? request.body : Params.empty();
}

async function refuse(
  ctx: FormServices,
  request: FastifyRequest,
  reply: FastifyReply,
  refusal: FormRefusal,
): Promise<FastifyReply> {
  if (refusal === 'json') return sendOAuthError(reply, formExpiredError());
  const body = formOf(request);
  const lang =
    refusal === 'page-in-pending-language'
      ? await pendingLanguage(ctx, request, reply, single(body, 'interaction'))
      : language(request, refusal === 'page-in-form-locales' ? single(body, 'ui_locales') : undefined);
  return formExpiredPage(ctx, reply, lang);
}
