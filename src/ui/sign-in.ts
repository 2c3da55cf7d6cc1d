/**
 * The login page (`/account/login`) and where a sign-in made there or at one of the
 * login steps (passkeys, security keys) goes on to: the pending request, /account, or a "signed in"
 * page.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { queryString, single } from '../http/fields.js';
import type { Pending } from '../interaction/interactions.js';
import { finishSignIn, resume } from '../interaction/outcomes.js';
import { Params } from '../protocol/params.js';
import type { Interaction } from '../stores/records/interactions.js';
import type { User } from '../users/users.js';
import { language } from './language.js';
import type { OutcomesServices } from '../interaction/outcomes.js';
import { homeRealmProvider, identityFirst } from '../interaction/home-realm.js';
import { returnPath } from './return-path.js';
import { samlPartyName } from '../interaction/saml.js';
import { type OutcomePageServices, signInDeniedPage } from './outcome-pages.js';

/** The services this module uses. */
export type SignInPageServices = Pick<
  Services,
  'basePath' | 'clients' | 'config' | 'email' | 'organizations' | 'pages' | 'saml' | 'upstream'
> &
  OutcomesServices &
  OutcomePageServices;

/** Where the sign-in through upstream provider `name` starts for pending request `id` (below the base path). */
function providerStart(name: string, id: string): string {
  return `/federation/${encodeURIComponent(name)}/login?interaction=${encodeURIComponent(id)}`;
}

/**
 * Home-realm discovery: the redirect to the upstream provider of the organization whose email
 * domain `address` is at, when the pending request's client may use it and the request names no
 * other organization (`homeRealmProvider`); undefined for a password sign-in at Sigil. It looks at
 * the domain only, so it answers alike for known and unknown users.
 */
export function homeRealmRedirect(
  ctx: SignInPageServices,
  reply: FastifyReply,
  id: string | undefined,
  interaction: Interaction | undefined,
  address: string,
): FastifyReply | undefined {
  const client = interaction ? ctx.clients.get(interaction.request.clientId) : undefined;
  if (id === undefined || !interaction || !client) return undefined;
  const allowed = ctx.upstream.allowedFor(client.identityProviderRestrictions).map((p) => p.name);
  const provider = homeRealmProvider(address, ctx.organizations, allowed, interaction.request.organization?.id);
  if (provider === undefined) return undefined;
  return reply.header('cache-control', 'no-store').redirect(`${ctx.basePath}${providerStart(provider, id)}`, 303);
}

/**
 * Ends a successful sign-in at Sigil (`finishSignIn`), then resumes the pending request, or,
 * without one, goes to the account page it started at (`returnTo`, from `returnPath`) or says who is signed in.
 */
export async function continueAfterSignIn(
  ctx: SignInPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  amr: string[],
  pending: Pending | undefined,
  lang: string,
  returnTo?: string,
): Promise<FastifyReply> {
  const how = { amr, idp: 'local', tenant: user.tenant, endpoint: 'login' } as const;
  const signedIn = await finishSignIn(ctx, request, reply, user, how, pending);
  if ('denied' in signedIn) return signInDeniedPage(ctx, request, reply, pending, signedIn);
  if (pending) return resume(ctx, reply, pending);
  if (returnTo) return reply.redirect(`${ctx.basePath}${returnTo}`, 303);
  return ctx.pages.send(reply, 'message', lang, {
    titleKey: 'signedInTitle',
    textKey: 'signedInAs',
    values: { user: user.username },
  });
}

/**
 * Renders the login page, with an error text when a sign-in failed. When an organization lists
 * email domains (`identityFirst`), it asks for the username or email alone first (`identify`, button
 * `next`), then for the password with the username kept (`password`); otherwise both at once.
 */
export function loginPage(
  ctx: SignInPageServices,
  request: FastifyRequest,
  reply: FastifyReply,
  id: string | undefined,
  interaction: Interaction | undefined,
  username: string,
  error:
    | 'invalidCredentials'
    | 'tooManyAttempts'
    | 'signInUnavailable'
    | 'passkeyFailed'
    | 'passkeyNeedsScript'
    | undefined,
  status = 200,
): FastifyReply {
  const pending = interaction?.request;
  const client = pending ? ctx.clients.get(pending.clientId) : undefined;
  const lang = language(request, pending?.uiLocales);
  return ctx.pages.send(
    reply,
    'login',
    lang,
    {
      csrf: reply.generateCsrf(),
      interaction: id,
      uiLocales: pending?.uiLocales,
      // The account page to continue at after signing in (its "sign in" links); never a URL.
      returnTo:
        id === undefined
          ? returnPath(
              queryString(request, 'return') ??
                (request.body instanceof Params ? single(request.body, 'return') : undefined),
            )
          : undefined,
      username,
      step: identityFirst(ctx.organizations) ? (username === '' ? 'identify' : 'password') : undefined,
      clientName: client ? (client.clientName ?? client.clientId) : samlPartyName(ctx, interaction),
      tenant: pending?.tenant ?? null,
      // The upstream providers the client may use (federation), as links that keep the request.
      providers:
        id && client
          ? ctx.upstream.allowedFor(client.identityProviderRestrictions).map((p) => ({
              label: p.displayName ?? p.name,
              href: providerStart(p.name, id),
            }))
          : [],
      error: error ? ctx.pages.text(lang, error) : undefined,
      passkeys: ctx.config.webauthn.enabled, // "Sign in with a passkey" (src/ui/passkeys.ts)
      // "Forgot password?" and "Create an account" (src/ui/email-pages.ts).
      forgot: ctx.email !== undefined && ctx.config.email?.passwordReset === true,
      register: ctx.email !== undefined && ctx.config.email?.selfRegistration === true,
    },
    status,
    pending?.target !== undefined,
  );
}
