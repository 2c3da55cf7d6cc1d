/**
 * Token creation and validation: access tokens (JWT per RFC 9068, or reference), identity tokens
 * (OIDC Core §2), refresh tokens (RFC 6749 §6), and the check of an access token presented back
 * to Sigil (userinfo, introspection, revocation, token exchange).
 */
import { createHash } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { compactVerify, decodeProtectedHeader } from 'jose';
import { fapi2SigningAlgorithm, ORGANIZATION_ADMIN_ROLE, ORGANIZATION_ADMIN_SCOPE } from '../config/schema.js';
import type { KeyRing } from '../keys/keys.js';
import type { Client } from '../clients/registry.js';
import { OFFLINE_ACCESS, scopesForUser, type Resources } from '../resources/scopes.js';
import { newFamilyId, newHandle, newId, nowSeconds } from '../crypto/handles.js';
import type { AddedClaims, AuthorizationDetail, GrantSubject, RequestedClaims } from '../stores/records/grant-data.js';
import type { GrantRecords } from '../stores/records/index.js';
import type { RefreshTokenData } from '../stores/records/refresh-tokens.js';
import type { OrganizationStore } from '../stores/types.js';
import { ORGANIZATION_CLAIMS, organizationClaims } from './organization-claims.js';
import type { ClientProfileRequest, ProfileDataRequest, ProfileService, SamlProfileRequest } from './profile.js';

/** The authenticated user a token is issued for: the grant's user with their profile claims. */
export interface Subject extends GrantSubject {
  /** Profile claims of the user, filtered per token type when issued. */
  claims: Record<string, unknown>;
}

/** Claims Sigil sets itself; a profile or an extension grant can never supply them. */
export const PROTOCOL_CLAIMS = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'nbf',
  'iat',
  'jti',
  'auth_time',
  'amr',
  'acr',
  'idp',
  'sid',
  'nonce',
  'at_hash',
  'c_hash',
  's_hash',
  'azp',
  'client_id',
  'scope',
  'cnf',
  'act',
  'may_act',
  'typ',
  'authorization_details',
  ...ORGANIZATION_CLAIMS,
]);

/** What the token endpoint answers on success (RFC 6749 §5.1, OIDC Core §3.1.3.3). */
export interface TokenResponse {
  access_token: string;
  /** `DPoP` when the access token is bound to a DPoP key (RFC 9449 §5). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
  issued_token_type?: string;
  /** The authorization details granted, as requested (RFC 9396 §7). */
  authorization_details?: AuthorizationDetail[];
}

/** How a refresh token accompanies an issuance. */
export type RefreshPlan =
  | { kind: 'none' }
  /** Create a new refresh token in `familyId`, valid until `expiresAt` (Unix seconds). */
  | {
      kind: 'new';
      expiresAt: number;
      absoluteExpiresAt: number;
      scopes: string[];
      resources?: string[];
      /**
       * The grant's authorization details (RFC 9396 §7.2), which the refresh token keeps when the
       * access token carries only some of them; absent: the issuance's `authorizationDetails`.
       */
      authorizationDetails?: AuthorizationDetail[];
    }
  /** Return this existing refresh token (usage `reuse`). */
  | { kind: 'existing'; handle: string };

/** Everything one token response is made from. */
export interface Issuance {
  client: Client;
  /** Granted scopes of the access token. */
  scopes: string[];
  /** The user; absent for client-only tokens (`sub` is then the client_id, RFC 9068 §2.2). */
  subject?: Subject;
  /** Grant family of the tokens; needed to revoke them together. */
  familyId?: string;
  /**
   * Latest expiry of the access token, Unix seconds: its `exp` is the earlier of this and now +
   * the client's `accessTokenLifetime`, and `expires_in` follows (RFC 8693 §2.2.1). Absent: no cap.
   */
  expiresAt?: number;
  refresh?: RefreshPlan;
  /** Issue an identity token when `openid` is granted and a user is present. */
  identityToken?: boolean;
  nonce?: string;
  /**
   * Individual claims asked for with the `claims` parameter (OIDC Core §5.5), already filtered to
   * what may be released: `id_token` names go into the identity token, `userinfo` names are kept
   * with the access token for the UserInfo endpoint, and both with a new refresh token.
   */
  requestedClaims?: RequestedClaims;
  /**
   * The DPoP key thumbprint (RFC 7638) to bind the access token to (`cnf.jkt`, RFC 9449 §6.1),
   * and a new refresh token (§5, for every client: once bound, always bound).
   */
  jkt?: string;
  /**
   * The API resources (names) the access token is for, from resource indicators (RFC 8707 §2):
   * its `aud` is limited to those of them that own a granted scope. Absent: every API resource
   * that owns a granted scope.
   */
  audiences?: readonly string[];
  /**
   * Extra access-token claims; protocol claims are dropped except `act` (RFC 8693 §4.1) and
   * `may_act` (§4.4), which the caller is responsible for.
   */
  extraClaims?: Record<string, unknown>;
  /**
   * Claims a `preToken` hook added to the access token and the identity token (protocol claims
   * dropped here too, whatever the caller passes); kept with a new refresh token.
   */
  hookClaims?: AddedClaims;
  /**
   * The authorization details of this access token (RFC 9396): in the token response (§7), the
   * access token's `authorization_details` claim (§9.1) and, unless the refresh plan names the
   * grant's own, a new refresh token, unchanged.
   */
  authorizationDetails?: AuthorizationDetail[];
}

/** An access token that Sigil accepted back. */
export interface ValidAccessToken {
  format: 'jwt' | 'reference';
  claims: JWTPayload & { client_id: string; scope?: string; sub: string };
  /**
   * The grant family the token belongs to (the `familyId` of its stored row: the reference
   * handle's row, or a JWT's `jti` row), or undefined for a JWT that was issued outside any
   * revocable grant and so has no row. Tokens issued into this family are revoked with it
   * (RFC 7009 §2.1, RFC 9700 §4.14.2).
   */
  familyId?: string;
  /** User claims the UserInfo endpoint releases for this token beyond its scopes' (OIDC Core §5.5). */
  userinfoClaims?: string[];
}

/** Claims of `extraClaims` that Sigil emits although they are protocol claims (RFC 8693 §4.1, §4.4). */
const DELEGATION_CLAIMS = new Set(['act', 'may_act']);

/** Longest token Sigil tries to validate, in characters. */
const MAX_TOKEN_LENGTH = 8192;

/** Creates and validates tokens for one issuer. */
export class TokenService {
  constructor(
    private readonly issuer: string,
    private readonly keys: KeyRing,
    private readonly records: Pick<GrantRecords, 'refreshTokens' | 'accessTokens'>,
    private readonly resources: Resources,
    private readonly profile?: ProfileService,
    /** The memberships that decide `sigil:org:admin` (absent: no user is an organization admin). */
    private readonly memberships?: Pick<OrganizationStore, 'holdsRole'>,
  ) {}

  /**
   * The user claims released to `client` for `caller`: the claims named in `names` from the
   * user's profile, or, with a profile service, what its `getProfileData` answers (protocol claims
   * dropped). Nothing requested, nothing released (the service is not asked).
   */
  releasedClaims(
    subject: { subjectId: string; claims: Record<string, unknown> },
    client: Client,
    names: Set<string>,
    caller: ClientProfileRequest['caller'],
  ): Promise<Record<string, unknown>> {
    return this.released(subject, names, { caller, client });
  }

  /**
   * The user claims released into a SAML assertion for the SP `entityId` (its `attributes`' claims
   * in `names`), as `releasedClaims` releases them to a client (caller `saml_assertion`).
   */
  releasedSamlClaims(
    subject: { subjectId: string; claims: Record<string, unknown> },
    entityId: string,
    names: Set<string>,
  ): Promise<Record<string, unknown>> {
    return this.released(subject, names, { caller: 'saml_assertion', serviceProvider: { entityId } });
  }

  private async released(
    subject: { subjectId: string; claims: Record<string, unknown> },
    names: Set<string>,
    to: Pick<ClientProfileRequest, 'caller' | 'client'> | Pick<SamlProfileRequest, 'caller' | 'serviceProvider'>,
  ): Promise<Record<string, unknown>> {
    if (!this.profile || names.size === 0) return pickClaims(subject.claims, names);
    const released = await this.profile.getProfileData({
      subject: subject.subjectId,
      requestedClaims: [...names],
      userClaims: subject.claims,
      ...to,
    } as ProfileDataRequest);
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(released))
      if (!PROTOCOL_CLAIMS.has(name) && value !== undefined) out[name] = value;
    return out;
  }

  /**
   * Issues the tokens of one successful request: an access token, and as applicable a refresh
   * token and an identity token.
   */
  async issue(request: Issuance): Promise<TokenResponse> {
    const now = nowSeconds();
    const req = await this.withUserScopes(request);
    const { client, scopes, subject } = req;
    // A new family id only when a row will name it: a JWT of client_credentials has none.
    let familyId = req.familyId;
    const family = (): string => (familyId ??= newFamilyId());
    const accessToken = await this.accessToken(req, family, now);
    const response: TokenResponse = {
      access_token: accessToken,
      token_type: req.jkt !== undefined ? 'DPoP' : 'Bearer',
      expires_in: accessTokenExpiry(req, now) - now,
      scope: scopes.join(' '),
      ...(req.authorizationDetails ? { authorization_details: req.authorizationDetails } : {}),
    };
    const plan = req.refresh ?? { kind: 'none' };
    if (plan.kind === 'existing') response.refresh_token = plan.handle;
    if (plan.kind === 'new' && subject) {
      const handle = newHandle();
      const data: RefreshTokenData = {
        scopes: plan.scopes,
        subject: withoutClaims(subject),
        absoluteExpiresAt: plan.absoluteExpiresAt,
        ...(req.requestedClaims ? { requestedClaims: req.requestedClaims } : {}),
        // Once bound, always bound: RFC 9449 §5 binds a public client's refresh token to the key;
        // Sigil binds every client's, so that a stolen refresh token and client secret without
        // the key give no Bearer tokens, and a refresh needs a proof with that key.
        ...(req.jkt !== undefined ? { jkt: req.jkt } : {}),
        ...(plan.resources !== undefined ? { resources: plan.resources } : {}),
        ...(req.hookClaims ? { hookClaims: req.hookClaims } : {}),
        ...((plan.authorizationDetails ?? req.authorizationDetails)
          ? { authorizationDetails: plan.authorizationDetails ?? req.authorizationDetails }
          : {}),
      };
      await this.records.refreshTokens.issue(handle, {
        clientId: client.clientId,
        subjectId: subject.subjectId,
        familyId: family(),
        sessionId: subject.sid ?? null,
        data,
        createdAt: now,
        expiresAt: plan.expiresAt,
      });
      response.refresh_token = handle;
    }
    if (req.identityToken && subject && scopes.includes('openid'))
      response.id_token = await this.identityToken(client, subject, now, {
        accessToken,
        scopes,
        nonce: req.nonce,
        claims: await this.releasedClaims(subject, client, new Set(req.requestedClaims?.id_token ?? []), 'id_token'),
        ...(req.hookClaims ? { added: req.hookClaims.idToken } : {}),
      });
    return response;
  }

  /**
   * `req` with the scopes a user's tokens may carry (`scopesForUser`): every grant that acts for a
   * user (authorization code, refresh, device, token exchange, password, extension grants) comes
   * through here, so none can hand a user's token the management scopes without the admin role
   * (for `sigil:org:admin`, an organization's admin role) and MFA. A new refresh token keeps the
   * narrowed scopes too.
   */
  private async withUserScopes(req: Issuance): Promise<Issuance> {
    const { subject } = req;
    if (!subject) return req;
    const role = this.resources.managementRole;
    const orgAdmin = await this.administersOrganization(subject, [
      ...req.scopes,
      ...(req.refresh?.kind === 'new' ? req.refresh.scopes : []),
    ]);
    const scopes = scopesForUser(req.scopes, subject, role, orgAdmin);
    const refresh =
      req.refresh?.kind === 'new'
        ? { ...req.refresh, scopes: scopesForUser(req.refresh.scopes, subject, role, orgAdmin) }
        : req.refresh;
    return { ...req, scopes, ...(refresh ? { refresh } : {}) };
  }

  /**
   * Whether `subject` is an admin of some organization (a membership with ORGANIZATION_ADMIN_ROLE),
   * asked of the store only when `scopes` has `sigil:org:admin` and the sign-in had MFA, without
   * which the scope is dropped anyway.
   */
  private async administersOrganization(subject: Subject, scopes: readonly string[]): Promise<boolean> {
    if (!scopes.includes(ORGANIZATION_ADMIN_SCOPE) || !subject.amr.includes('mfa') || !this.memberships) return false;
    return this.memberships.holdsRole(subject.subjectId, ORGANIZATION_ADMIN_ROLE);
  }

  /** Whether an issuance with these scopes may carry a refresh token (OIDC Core §11). */
  static wantsRefreshToken(client: Client, scopes: readonly string[]): boolean {
    return client.allowOfflineAccess && scopes.includes(OFFLINE_ACCESS);
  }

  /**
   * Creates one access token (RFC 9068 JWT or reference, per the client's `accessTokenType`) in
   * the grant family that `family()` names (called only when the token gets a stored row); `now` in
   * Unix seconds.
   */
  async accessToken(req: Issuance, family: () => string, now: number): Promise<string> {
    const { client, scopes, subject } = req;
    const owners = this.resources.audiences(scopes);
    const audiences = req.audiences === undefined ? owners : owners.filter((a) => req.audiences?.includes(a));
    const exp = accessTokenExpiry(req, now);
    // Kept in the token's stored row, not in the token: the API it is sent to has no use for it.
    const userinfoClaims = req.requestedClaims?.userinfo;
    const claims: ValidAccessToken['claims'] & Record<string, unknown> = {
      iss: this.issuer,
      exp,
      iat: now,
      nbf: now,
      // RFC 9068 §2.2 requires `aud`. Without an API resource the token is for Sigil's own
      // userinfo endpoint; Duende's static audience `<issuer>/resources` names that case.
      aud: audiences.length === 0 ? `${this.issuer}/resources` : audiences.length === 1 ? audiences[0] : audiences,
      sub: subject ? subject.subjectId : client.clientId,
      client_id: client.clientId,
      jti: newId(),
      scope: scopes.join(' '),
    };
    if (req.jkt !== undefined) claims.cnf = { jkt: req.jkt };
    if (req.authorizationDetails) claims.authorization_details = req.authorizationDetails;
    if (subject) {
      claims.auth_time = subject.authTime;
      claims.amr = subject.amr;
      if (subject.idp) claims.idp = subject.idp;
      if (subject.sid) claims.sid = subject.sid;
      // RFC 9068 §2.2.1: the authentication information the request asked for (acr_values).
      if (subject.acr) claims.acr = subject.acr;
      Object.assign(claims, organizationClaims(subject.organization, scopes));
      Object.assign(
        claims,
        await this.releasedClaims(subject, client, this.resources.accessTokenClaimNames(scopes), 'access_token'),
      );
    }
    for (const [name, value] of Object.entries(req.extraClaims ?? {}))
      if (!PROTOCOL_CLAIMS.has(name) || DELEGATION_CLAIMS.has(name)) claims[name] = value;
    addClaims(claims, req.hookClaims?.accessToken);

    if (client.accessTokenType === 'reference') {
      const handle = newHandle();
      await this.records.accessTokens.putReference(handle, {
        clientId: client.clientId,
        subjectId: subject?.subjectId ?? null,
        familyId: family(),
        sessionId: subject?.sid ?? null,
        data: { claims, ...(userinfoClaims ? { userinfoClaims } : {}) },
        createdAt: now,
        expiresAt: exp,
      });
      return handle;
    }
    // JWT access tokens that belong to a revocable grant get a row, so that revoking the grant
    // (RFC 7009 §2.1, RFC 9700 §4.14.2) also ends them as seen by userinfo and introspection.
    if (req.familyId !== undefined || (req.refresh && req.refresh.kind !== 'none') || userinfoClaims) {
      await this.records.accessTokens.putMark(claims.jti as string, {
        clientId: client.clientId,
        subjectId: subject?.subjectId ?? null,
        familyId: family(),
        sessionId: subject?.sid ?? null,
        data: userinfoClaims ? { userinfoClaims } : {},
        createdAt: now,
        expiresAt: exp,
      });
    }
    return this.keys.sign(claims, 'at+jwt', this.signingAlgorithmFor(client));
  }

  /**
   * The algorithm a client's tokens are signed with: for a `fapi2` client the first of
   * `signingAlgorithms` that FAPI 2.0 allows (§5.4.1: PS256, ES256, EdDSA; the config refuses a
   * fapi2 client without one), else the first configured.
   */
  signingAlgorithmFor(client: Pick<Client, 'profile'>): string {
    return (
      (client.profile === 'fapi2' ? fapi2SigningAlgorithm(this.keys.algorithms) : undefined) ??
      this.keys.defaultAlgorithm
    );
  }

  /**
   * An identity token (OIDC Core §2, §3.1.3.6): `iss, sub, aud, exp, iat, auth_time, amr`, plus
   * `acr`, `nonce`, `sid`, `at_hash` and `c_hash` when given. Profile claims go through userinfo,
   * except those in `opts.claims` (response type `id_token`, or the `claims` parameter). The
   * organization claims (`organizationClaims`) of the granted `opts.scopes` when signed in to one.
   */
  async identityToken(
    client: Client,
    subject: Subject,
    now: number,
    opts: {
      accessToken?: string;
      code?: string;
      nonce?: string | undefined;
      claims?: Record<string, unknown>;
      scopes?: readonly string[];
      /** Claims a `preToken` hook added (protocol claims dropped). */
      added?: Record<string, unknown>;
    },
  ): Promise<string> {
    const alg = this.signingAlgorithmFor(client);
    const claims: JWTPayload & Record<string, unknown> = {
      iss: this.issuer,
      sub: subject.subjectId,
      aud: client.clientId,
      exp: now + client.identityTokenLifetime,
      iat: now,
      auth_time: subject.authTime,
      amr: subject.amr,
    };
    if (subject.idp) claims.idp = subject.idp;
    if (subject.sid) claims.sid = subject.sid;
    if (subject.acr) claims.acr = subject.acr;
    Object.assign(claims, organizationClaims(subject.organization, opts.scopes ?? []));
    for (const [name, value] of Object.entries(opts.claims ?? {})) if (!PROTOCOL_CLAIMS.has(name)) claims[name] = value;
    addClaims(claims, opts.added);
    if (opts.nonce !== undefined) claims.nonce = opts.nonce;
    if (opts.accessToken) claims.at_hash = leftHalfHash(opts.accessToken, alg);
    if (opts.code) claims.c_hash = leftHalfHash(opts.code, alg);
    return this.keys.sign(claims, 'JWT', alg);
  }

  /**
   * Validates an access token presented to Sigil: a JWT must carry `typ: at+jwt`, verify against
   * Sigil's keys and issuer and be unexpired; a reference token must be stored, unexpired and
   * unrevoked. Either is refused once its grant or it was revoked.
   * @returns the token's claims, or undefined when it is not a valid access token.
   */
  async validateAccessToken(token: string): Promise<ValidAccessToken | undefined> {
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return undefined;
    const now = nowSeconds();
    if (token.includes('.')) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, this.keys.verificationKeys, {
          issuer: this.issuer,
          typ: 'at+jwt',
          algorithms: this.keys.algorithms,
          requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id'],
        }));
      } catch (err) {
        if (err instanceof joseErrors.JOSEError || err instanceof TypeError) return undefined;
        throw err;
      }
      const mark = await this.records.accessTokens.findMark(String(payload.jti));
      if (mark === 'revoked') return undefined;
      const claims = payload as ValidAccessToken['claims'];
      return mark
        ? { format: 'jwt', claims, familyId: mark.familyId, ...userinfoClaimsOf(mark.data) }
        : { format: 'jwt', claims };
    }
    const row = await this.records.accessTokens.findReference(token, now);
    if (!row) return undefined;
    return { format: 'reference', claims: row.data.claims, familyId: row.familyId, ...userinfoClaimsOf(row.data) };
  }

  /**
   * Verifies an identity token Sigil issued, presented back as `id_token_hint` (OIDC Core
   * §3.1.2.1; RP-Initiated Logout §2): signature and issuer are checked, expiry is not (an
   * expired hint is still genuine).
   * @returns the hint's subject, audience and session, or undefined when it is not genuine.
   */
  async verifyIdTokenHint(token: string): Promise<IdTokenHint | undefined> {
    if (token.length > MAX_TOKEN_LENGTH) return undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.typ !== 'JWT' || !this.keys.algorithms.includes(header.alg as never)) return undefined;
      const { payload } = await compactVerify(token, this.keys.verificationKeys);
      const claims = JSON.parse(new TextDecoder().decode(payload)) as JWTPayload & { sid?: unknown };
      if (claims.iss !== this.issuer || typeof claims.sub !== 'string') return undefined;
      const aud = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : [];
      return { sub: claims.sub, aud, ...(typeof claims.sid === 'string' ? { sid: claims.sid } : {}) };
    } catch {
      return undefined;
    }
  }
}

/** What a verified `id_token_hint` tells. */
export interface IdTokenHint {
  sub: string;
  /** The client(s) the identity token was issued to. */
  aud: string[];
  sid?: string;
}

/**
 * The subject of the user an access token acts for, or undefined for a client's own token
 * (client_credentials, or an extension grant without a user: `sub` is then the client_id, RFC 9068
 * §2.2). Decided from the token alone: every token issued for a user carries `auth_time` (RFC 9068
 * §2.2.1; `Issuance.subject.authTime` is required), a client's own never does (it is a protocol
 * claim: no profile or extension grant can add it). Never from comparing `sub` with `client_id` or
 * looking `sub` up as a client id: a directory user's subject may equal a client's id, and a
 * client's id a user's subject, and a name collision must not decide whose token it is.
 */
export function userSubjectOf(claims: ValidAccessToken['claims']): string | undefined {
  return typeof claims.auth_time === 'number' ? claims.sub : undefined;
}

/** The DPoP key thumbprint an access token is bound to (`cnf.jkt`, RFC 9449 §6.1), if any. */
export function boundKey(claims: Record<string, unknown>): string | undefined {
  const cnf = claims.cnf;
  if (cnf === null || typeof cnf !== 'object') return undefined;
  const jkt = (cnf as Record<string, unknown>).jkt;
  return typeof jkt === 'string' ? jkt : undefined;
}

/** The user claims named in `names`, protocol claims excluded; values keep their JSON type. */
export function pickClaims(claims: Record<string, unknown>, names: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) if (!PROTOCOL_CLAIMS.has(name) && Object.hasOwn(claims, name)) out[name] = claims[name];
  return out;
}

/** Adds a hook's `added` claims to `claims`, never a protocol claim (`PROTOCOL_CLAIMS`, the delegation ones too). */
function addClaims(claims: Record<string, unknown>, added: Record<string, unknown> | undefined): void {
  for (const [name, value] of Object.entries(added ?? {})) if (!PROTOCOL_CLAIMS.has(name)) claims[name] = value;
}

/**
 * `at_hash` / `c_hash` (OIDC Core §3.1.3.6, §3.3.2.11): the left half of the hash of the ASCII
 * value, with the hash of the signing algorithm's size, base64url.
 */
export function leftHalfHash(value: string, alg: string): string {
  // OIDC Core §3.1.3.6 (errata set 2): EdDSA with Ed25519 hashes with SHA-512.
  const bits = alg.endsWith('512') || alg === 'EdDSA' ? 'sha512' : alg.endsWith('384') ? 'sha384' : 'sha256';
  const digest = createHash(bits).update(value, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/**
 * The `exp` of the access token of `req` issued at `now` (Unix seconds): now + the client's
 * `accessTokenLifetime`, or `req.expiresAt` when that is earlier.
 */
function accessTokenExpiry(req: Issuance, now: number): number {
  const full = now + req.client.accessTokenLifetime;
  return req.expiresAt === undefined ? full : Math.min(full, req.expiresAt);
}

/** `{ userinfoClaims }` from a stored access token row's data, when it has them. */
function userinfoClaimsOf(data: unknown): { userinfoClaims?: string[] } {
  const names = (data as { userinfoClaims?: unknown } | null)?.userinfoClaims;
  return Array.isArray(names) ? { userinfoClaims: names.filter((n): n is string => typeof n === 'string') } : {};
}

function withoutClaims(subject: Subject): Omit<Subject, 'claims'> {
  const { claims: _claims, ...rest } = subject;
  return rest;
}
