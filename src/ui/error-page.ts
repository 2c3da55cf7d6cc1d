/**
 * The error pages every browser route shares (DESIGN §6: an error page that names the error and
 * never reflects raw input): a refused request, and an unknown or expired pending request.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SigilContext } from '../context.js';
import type { OAuthError } from '../protocol/errors.js';
import { language } from './language.js';

/** The error page (D-25): 400 HTML naming the error; it never links to any client URI. */
export function sendErrorPage(ctx: SigilContext, reply: FastifyReply, error: OAuthError, lang: string, status = 400): FastifyReply {
  const data = { titleKey: 'errorTitle', textKey: 'errorIntro', code: error.code, description: error.description };
  return ctx.pages.send(reply, 'message', lang, data, status);
}

/** The page shown for an unknown, expired or foreign interaction id (400). */
export function expiredPage(ctx: SigilContext, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return ctx.pages.send(reply, 'message', language(request), { titleKey: 'errorTitle', textKey: 'expired' }, 400);
}
