/**
 * `password` (RFC 6749 §4.3): the resource owner's username and password, checked by a resource
 * owner validator. `acr_values` may carry `tenant:<name>` (scopes the user lookup) and
 * `idp:<name>` (handed to the validator; refused when the client's identityProviderRestrictions
 * exclude it).
 */
import { invalidGrant } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { TokenService } from '../tokens/tokens.js';
import type { User } from '../users/users.js';
import { parseAcrValues } from '../validation/acr-values.js';
import type { Client } from '../clients/registry.js';
import { userAttempt } from '../limits/failure-limiter.js';
import { requestedResources, scopesForResources } from '../resources/resource-indicators.js';
import { validateScopes } from '../resources/scopes.js';
import type { Services } from '../services.js';
import { bindingOf, type GrantHandler } from './registry.js';
import { askPreToken } from './pre-token.js';
import { claimsOf } from '../users/users.js';
import { MAX_USERNAME_LENGTH } from '../config/schema.js';

/** The services this module uses. */
export type PasswordGrantServices = Pick<Services, 'events' | 'limiter' | 'mfa' | 'resources' | 'tokens' | 'users'>;

/** What a resource owner validator is asked. */
export interface ResourceOwnerRequest {
  username: string;
  password: string;
  /** From `acr_values=tenant:<name>`, or null. */
  tenant: string | null;
  /** From `acr_values=idp:<name>`, or null; already checked against the client's restrictions. */
  idp: string | null;
  client: Readonly<Client>;
}

/**
 * Checks resource owner credentials (extension point of `createSigil`). Returns the user, or
 * undefined for wrong credentials (answered with `invalid_grant`); may throw an `OAuthError`.
 */
export type ResourceOwnerValidator = (
  ctx: PasswordGrantServices,
  req: ResourceOwnerRequest,
) => Promise<User | undefined>;

/** The built-in validator: the config's users and the store's, passwords verified with argon2id. */
export const defaultResourceOwnerValidator: ResourceOwnerValidator = (ctx, req) =>
  ctx.users.checkPassword(req.username, req.password, req.tenant);

/**
 * The handler of `grant_type=password` that checks credentials with `validator` (the built-in
 * `defaultResourceOwnerValidator`, or a library user's `resourceOwnerValidator`).
 * @throws OAuthError `invalid_request` (missing username/password), `invalid_grant` (wrong
 *   credentials or inactive user, one description for both; excluded `idp:`; a user with a second
 *   factor or a client with `requireMfa`, unless `allowPasswordGrantForMfaUsers`; a temporary password
 *   an administrator set), `invalid_scope`,
 *   `invalid_target` (RFC 8707), `invalid_grant` when the `preToken` hook denies, 429 while the address or the (user, address) pair is blocked after repeated failures.
 */
export function passwordGrant(validator: ResourceOwnerValidator): GrantHandler {
  return async (ctx, req) => {
    const { params, client, origin } = req;
    const username = params.require('username');
    const password = params.require('password');
    if (username.length > MAX_USERNAME_LENGTH || password.length > 1024)
      throw invalidGrant('invalid username or password');
    const acr = parseAcrValues(params.get('acr_values'));
    if (
      acr.idp !== null &&
      client.identityProviderRestrictions.length > 0 &&
      !client.identityProviderRestrictions.includes(acr.idp)
    )
      throw invalidGrant('the identity provider is not allowed for this client');
    const granted = validateScopes(params.get('scope'), client, ctx.resources, 'user');
    const targets = requestedResources(params.getAll('resource'), client, ctx.resources);
    const scopes = scopesForResources(granted, targets, ctx.resources);

    const attempt = userAttempt(origin.remoteAddress, acr.tenant, username);
    await ctx.limiter.before(attempt);
    const user = await validator(ctx, { username, password, tenant: acr.tenant, idp: acr.idp, client });
    // An inactive user with the right password gets the wrong password's answer and counts as a
    // failure: the answer must not tell that the password was right (the event keeps the reason).
    if (!user?.isActive) {
      await ctx.limiter.failed(attempt);
      ctx.events.emit({
        name: 'user_login_failed',
        endpoint: 'token',
        method: 'password_grant',
        clientId: client.clientId,
        ...origin,
        ...(user ? { subjectId: user.subjectId, errorDescription: 'inactive user' } : {}),
      });
      throw invalidGrant('invalid username or password');
    }
    /** A right password that still signs nobody in here: the event says why, the client is told. */
    const refuse = (errorDescription: string, message: string): never => {
      ctx.events.emit({
        name: 'user_login_failed',
        endpoint: 'token',
        method: 'password_grant',
        clientId: client.clientId,
        subjectId: user.subjectId,
        errorDescription,
        ...origin,
      });
      throw invalidGrant(message);
    };
    // A password alone does not sign in a user who has a second factor, nor anyone at a client that
    // requires one, unless the client is allowed (`allowPasswordGrantForMfaUsers`).
    if (
      !client.allowPasswordGrantForMfaUsers &&
      (await ctx.mfa.nextStep(user.subjectId, ctx.mfa.requiredFor(client))) !== 'none'
    )
      refuse(
        'second factor required',
        'this sign-in needs a second factor, which the password grant cannot carry: sign in through the browser',
      );
    // A temporary password an administrator set issues nothing until the user replaced it at sign-in.
    if (user.passwordChangeRequired)
      refuse(
        'password change required',
        'the password is a temporary one: sign in through the browser to choose a new password',
      );
    ctx.events.emit({
      name: 'user_login_succeeded',
      endpoint: 'token',
      method: 'password_grant',
      clientId: client.clientId,
      subjectId: user.subjectId,
      ...origin,
    });

    const now = nowSeconds();
    const subject = {
      subjectId: user.subjectId,
      authTime: now,
      amr: ['pwd'],
      claims: claimsOf(user),
      // The built-in validator checks local users; a custom one may have used the idp: hint.
      idp: validator === defaultResourceOwnerValidator ? 'local' : (acr.idp ?? 'local'),
      ...(acr.tenant ? { tenant: acr.tenant } : {}),
    };
    const hookClaims = await askPreToken(ctx, client, subject, scopes, 'password');
    const response = await ctx.tokens.issue({
      client,
      scopes,
      subject,
      ...(hookClaims ? { hookClaims } : {}),
      identityToken: true,
      refresh: newRefreshPlan(client, granted, now, targets),
      ...bindingOf(req),
      ...(targets ? { audiences: targets } : {}),
    });
    return { response, subjectId: user.subjectId };
  };
}

/**
 * The refresh token plan for a fresh grant: a new refresh token when `offline_access` was granted,
 * expiring per the client's `refreshTokenExpiration` (seconds from `now`), limited to the API
 * resources `resources` (names, RFC 8707) when given.
 */
export function newRefreshPlan(client: Client, scopes: string[], now: number, resources?: string[]) {
  if (!TokenService.wantsRefreshToken(client, scopes)) return { kind: 'none' as const };
  const absoluteExpiresAt = now + client.absoluteRefreshTokenLifetime;
  const expiresAt =
    client.refreshTokenExpiration === 'sliding'
      ? Math.min(now + client.slidingRefreshTokenLifetime, absoluteExpiresAt)
      : absoluteExpiresAt;
  return { kind: 'new' as const, expiresAt, absoluteExpiresAt, scopes, ...(resources ? { resources } : {}) };
}
