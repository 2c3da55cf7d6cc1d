/**
 * The language of a page (`ui_locales` honoured): the request's `ui_locales`, or the
 * pending authorization request's (OIDC Core §3.1.2.1), else `Accept-Language`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { browserOf } from '../interaction/browser.js';
import type { Locales } from '../page-kit/i18n.js';
import type { BrowserServices } from '../interaction/browser.js';

/** The services this module uses. */
export type LanguagePageServices = Pick<Services, 'interactions'> & BrowserServices;

declare module 'fastify' {
  interface FastifyInstance {
    /** The languages of the Sigil instance this app serves (`Pages.locales`), decorated by `buildApp`. */
    locales: Locales;
  }
}

/** The page language of a request from its `ui_locales` parameter or `Accept-Language`. */
export function language(request: FastifyRequest, uiLocales?: string): string {
  let fromQuery: string | undefined = uiLocales;
  if (fromQuery === undefined) {
    const q = (request.query as Record<string, unknown> | undefined)?.ui_locales;
    if (typeof q === 'string') fromQuery = q;
  }
  return request.server.locales.pick(fromQuery, request.headers['accept-language']);
}

/**
 * The language of a page shown for the pending authorization request `id` of this browser (login
 * steps, consent): the request's `ui_locales` (OIDC Core §3.1.2.1), else as `language`.
 */
export async function pendingLanguage(
  ctx: LanguagePageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string | undefined,
): Promise<string> {
  const interaction = await ctx.interactions.get(id, browserOf(ctx, request, reply));
  return language(request, interaction?.request.uiLocales);
}
