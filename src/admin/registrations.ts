/**
 * Dynamic Client Registration (RFC 7591) and its management (RFC 7592): the service behind
 * `/connect/register` and the client configuration endpoint. A registered client is checked by
 * `checkMetadata` (the policy of config `registration`), then written by `ClientAdmin` (which checks
 * the config file's client rules and revokes what a deleted client was issued) with the other
 * stored clients (so every node loads it on its reload), with a registration record holding the
 * SHA-256 of its registration access token.
 *
 * Access:
 * - registration needs an initial access token unless `registration.open`: an access token with
 *   the scope `sigil:register` (each may register `registrationsPerAccessToken` clients), or one
 *   minted by `sigil clients initial-token` (its own cap and expiry); the count is taken in the
 *   same transaction that stores the client;
 * - management needs the client's registration access token, which every update replaces
 *   (RFC 7592 §2.2): the old one stops working.
 * Errors are `OAuthError`s as the wire has them: RFC 7591 §3.2.2 codes with 400, RFC 6750 §3.1
 * `invalid_token` (401) or `insufficient_scope` (403) with a Bearer challenge.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/loader.js';
import type { MANAGEMENT_SCOPES } from '../config/schema.js';
import type { ClientRegistry } from '../clients/registry.js';
import { checkMetadata, type CheckedMetadata, type RegistrationPolicy } from '../clients/registration-metadata.js';
import { clientCredentialsScopes, consentedScopes, type KnownScopes } from '../clients/unvetted-scopes.js';
import { hashHandle, newHandle, newId, nowSeconds } from '../crypto/handles.js';
import { OAuthError } from '../protocol/errors.js';
import type { ClientRegistration, InitialAccessToken, RegistrationStore } from '../stores/client-registrations.js';
import type { EventBus, RequestOrigin } from '../events/events.js';
import type { TokenService } from '../tokens/tokens.js';
import type { SyncHooks } from '../webhooks/hooks.js';
import { boundKey } from '../tokens/tokens.js';
import { AdminError } from './errors.js';
import type { ClientAdmin } from './clients.js';

/** The scope an access token needs to serve as an initial access token. */
export const REGISTER_SCOPE: (typeof MANAGEMENT_SCOPES)[number] = 'sigil:register';
/** Seconds in a day: last use is recorded at most once per client per day. */
const DAY = 86_400;
/** Most unused clients removed per run. */
const REMOVAL_BATCH = 100;

/** The answer of a registration or management call (RFC 7591 §3.2.1; RFC 7592 §3). */
export type RegistrationResponse = Record<string, unknown>;

/** What `ClientRegistrations` needs besides the store. */
export interface RegistrationServices {
  config: ResolvedConfig;
  issuer: string;
  admin: ClientAdmin;
  clients: ClientRegistry;
  tokens: Pick<TokenService, 'validateAccessToken'>;
  /**
   * The scopes known now, read at each registration and update: `all`, every scope name (identity,
   * API, `offline_access`), and `identity`, the identity scopes' names; the config file's and
   * those stored through /admin/v1 (`Resources`).
   */
  scopes: () => KnownScopes;
  /** The algorithm of dynamic clients' identity tokens (the first of `signingAlgorithms`). */
  idTokenAlg: string;
  /** Re-reads the stored clients into `clients` (this node; others on their reload). */
  reload: () => Promise<void>;
  /**
   * Fetches a registrant's JSON document (`sector_identifier_uri`) within bounds and under the SSRF guard
   * (`fetchBoundedText` with `ClientKeys.guardedGet`).
   */
  fetchText: (url: string) => Promise<string>;
  /** Audit events: `client_registered`, `client_updated`, `client_deleted`. */
  events: EventBus;
  /** The `preRegistration` hook, asked before a client is registered. */
  hooks: Pick<SyncHooks, 'has' | 'preRegistration'>;
  log: Logger;
}

/** The endpoint name of the audit events of registration and management. */
const ENDPOINT = 'register';

/** A 401 with a Bearer challenge (RFC 6750 §3, §3.1). */
function unauthorized(description?: string): OAuthError {
  if (description === undefined)
    return new OAuthError('invalid_token', undefined, 401, { 'www-authenticate': 'Bearer' });
  return new OAuthError('invalid_token', description, 401, {
    'www-authenticate': `Bearer error="invalid_token", error_description="${description}"`,
  });
}

/** Registration, read, update and delete of dynamic clients; last-use records and their removal. */
export class ClientRegistrations {
  /** The policy of config `registration`, but for the scopes (`policy()` adds the scopes known then). */
  private readonly fixedPolicy: Omit<RegistrationPolicy, 'allowedScopes' | 'clientCredentialsScopes' | 'defaultScopes'>;
  /** The ids of dynamic clients (refreshed by `refresh`), so `touch` ignores every other client cheaply. */
  private dynamic = new Set<string>();
  /** Client id → the day (Unix days) its use was last recorded by this node. */
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly store: RegistrationStore,
    private readonly services: RegistrationServices,
  ) {
    const r = services.config.registration;
    this.fixedPolicy = {
      allowedGrantTypes: r.allowedGrantTypes,
      allowedAuthMethods: r.allowedTokenEndpointAuthMethods,
      idTokenAlg: services.idTokenAlg,
      // Development: an http issuer on a loopback host accepts loopback http URIs, as the config file does.
      loopbackHttp: /^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?(\/|$)/.test(services.issuer),
      notificationLoopback: services.config.clientIdMetadataDocuments.allowLoopback,
    };
  }

  /**
   * The registration policy with the scopes a dynamic client may have now (`unvetted-scopes.ts`,
   * the policy of metadata-document clients too): by default every known scope but `scim` and
   * `sigil:*`, granted only through the user's consent; with `client_credentials`, only those
   * config `registration.allowedScopes` lists (without a list: identity scopes and
   * `offline_access`); `offline_access` only when `refresh_token` is allowed. Read at each
   * registration and update, so stored scopes count and deleted ones no longer do.
   */
  private policy(): RegistrationPolicy {
    const r = this.services.config.registration;
    const known = this.services.scopes();
    const offline = (scopes: string[]) =>
      r.allowedGrantTypes.includes('refresh_token') ? scopes : scopes.filter((s) => s !== 'offline_access');
    const allowedScopes = offline(consentedScopes(known, r.allowedScopes));
    return {
      ...this.fixedPolicy,
      allowedScopes,
      clientCredentialsScopes: offline(clientCredentialsScopes(known, r.allowedScopes)),
      // No scope asked (RFC 7591 §2 lets the server pick): the configured list, else the identity
      // scopes; never an API scope the registrant did not name.
      defaultScopes: allowedScopes.filter(
        (s) => s !== 'offline_access' && (r.allowedScopes !== undefined || known.identity.includes(s)),
      ),
    };
  }

  /** The client configuration endpoint of a client (RFC 7592 §3 `registration_client_uri`). */
  clientUri(clientId: string): string {
    return `${this.services.issuer}/connect/register/${encodeURIComponent(clientId)}`;
  }

  /**
   * Registers a client (RFC 7591 §3.1).
   * @param body the parsed JSON body
   * @param initialToken the bearer token of the request, if any
   * @param origin who asked, for the audit event
   * @returns the 201 response body, with the client secret (shown this once) and the registration access token
   * @throws OAuthError 401 without or with a bad, expired or used-up initial access token
   *   (unless open), 403 `insufficient_scope`, 400 RFC 7591 §3.2.2 errors, 400 `access_denied`
   *   when the `preRegistration` hook denies
   */
  async register(
    body: unknown,
    initialToken: string | undefined,
    origin?: RequestOrigin,
  ): Promise<RegistrationResponse> {
    const now = nowSeconds();
    // The token first (no sector fetch for a caller without one), recorded only once the metadata passed.
    const slot = await this.initialTokenSlot(initialToken, now);
    const checked = await this.check(body);
    await this.askHook(checked, origin);
    if (slot?.first) await this.store.addInitialToken(slot.first);
    const clientId = newId();
    const secret = checked.needsSecret ? newHandle() : undefined;
    const token = newHandle();
    const registration: ClientRegistration = {
      clientId,
      tokenHash: hashHandle(token),
      metadata: checked.metadata,
      issuedAt: now,
      lastUsedAt: now,
    };
    const client = { clientId, ...checked.client, clientSecrets: secret === undefined ? [] : [secret] };
    if (!(await this.admin((admin) => admin.register(client, registration, slot?.hash, now))))
      throw unauthorized('the initial access token is used up or expired');
    await this.services.reload();
    this.dynamic.add(clientId);
    this.services.events.emit({
      name: 'client_registered',
      endpoint: ENDPOINT,
      clientId,
      scopes: String(checked.metadata.scope).split(' '),
      ...origin,
    });
    return this.response(registration, {
      registration_access_token: token,
      ...(secret !== undefined ? { client_secret: secret } : {}),
    });
  }

  /**
   * Asks the `preRegistration` hook about metadata that passed the checks, before anything is
   * stored (the initial access token's use included).
   * @throws OAuthError 400 `access_denied` with the hook's description: RFC 7591 §3.2.2 defines
   *   codes for faulty metadata and software statements, none for a refusal by policy; DESIGN §6b
   *   names `access_denied` (RFC 6749's code for a refusal) for every hook's denial, and the status
   *   is §3.2.2's 400.
   */
  private async askHook(checked: CheckedMetadata, origin: RequestOrigin | undefined): Promise<void> {
    if (!this.services.hooks.has('preRegistration')) return;
    const verdict = await this.services.hooks.preRegistration({
      kind: 'client',
      metadata: checked.metadata,
      ip: origin?.remoteAddress ?? '',
    });
    if (!verdict.allowed) throw new OAuthError('access_denied', verdict.description);
  }

  /**
   * Reads a client's registration (RFC 7592 §2.1).
   * @throws OAuthError 401 `invalid_token` when the token is missing or not this client's (an unknown client too)
   */
  async read(clientId: string, token: string | undefined): Promise<RegistrationResponse> {
    const registration = await this.authorize(clientId, token);
    this.touch(clientId);
    return this.response(registration, {});
  }

  /**
   * Replaces a client's metadata (RFC 7592 §2.2): what the body omits is reset to its default.
   * The registration access token is replaced; the response carries the new one. The client
   * secret stays unless the client had none and now needs one (then the response carries it).
   * @throws OAuthError 401 as `read`; 400 RFC 7591 §3.2.2 errors, also when `client_id` is not
   *   this client's or `client_secret` is not its current secret
   */
  async update(
    clientId: string,
    token: string | undefined,
    body: unknown,
    origin?: RequestOrigin,
  ): Promise<RegistrationResponse> {
    const registration = await this.authorize(clientId, token);
    const m = (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) as Record<
      string,
      unknown
    >;
    if (m.client_id !== clientId) throw new OAuthError('invalid_client_metadata', "client_id must be the client's own");
    const current = await this.current(clientId);
    const digest = current.clientSecrets[0];
    if (
      m.client_secret !== undefined &&
      (typeof m.client_secret !== 'string' ||
        digest === undefined ||
        !sameHash(hashHandle(m.client_secret), digestToHandleHash(digest)))
    )
      throw new OAuthError('invalid_client_metadata', 'client_secret is not the current secret');
    const checked = await this.check(body);
    const secret = checked.needsSecret && digest === undefined ? newHandle() : undefined;
    const secrets = checked.needsSecret ? (secret !== undefined ? [secret] : [digest as string]) : [];
    const next = newHandle();
    const client = { clientId, ...checked.client, clientSecrets: secrets };
    const tokenHash = hashHandle(next);
    const updated = await this.admin((admin) =>
      admin.updateRegistered(clientId, registration.tokenHash, client, checked.metadata, tokenHash, nowSeconds()),
    );
    if (!updated) throw unauthorized('the registration access token is no longer valid');
    await this.services.reload();
    this.services.events.emit({
      name: 'client_updated',
      endpoint: ENDPOINT,
      clientId,
      scopes: String(checked.metadata.scope).split(' '),
      ...origin,
    });
    return this.response(
      { ...registration, metadata: checked.metadata },
      { registration_access_token: next, ...(secret !== undefined ? { client_secret: secret } : {}) },
    );
  }

  /**
   * Deletes a client (RFC 7592 §2.3): its settings and registration; its credentials fail from
   * then on (at once on this node, within `signingKeys.reloadSeconds` on the others), and the
   * grants and tokens issued to it are revoked (`ClientAdmin.deleteRegistered`).
   * @throws OAuthError 401 as `read`
   */
  async remove(clientId: string, token: string | undefined, origin?: RequestOrigin): Promise<void> {
    await this.authorize(clientId, token);
    if (!(await this.services.admin.deleteRegistered(clientId)))
      throw unauthorized('the registration access token is invalid');
    this.dynamic.delete(clientId);
    await this.services.reload();
    this.services.events.emit({ name: 'client_deleted', endpoint: ENDPOINT, clientId, ...origin });
  }

  /**
   * Notes that a client was used. For a dynamic client whose use this node has not recorded
   * today, records it in the store (one conditional UPDATE, skipped when another node recorded
   * it within the day); nothing else costs more than two map lookups.
   */
  touch(clientId: string, now = nowSeconds()): void {
    if (!this.dynamic.has(clientId)) return;
    const day = Math.floor(now / DAY);
    if (this.touched.get(clientId) === day) return;
    this.touched.set(clientId, day);
    this.store
      .touch(clientId, now, now - DAY)
      .catch((err: unknown) => this.services.log.warn({ err, clientId }, 'recording a client use failed'));
  }

  /**
   * Removes dynamic clients unused for `registration.unusedClientDays` (none when 0) and expired
   * initial access tokens, then refreshes the set of dynamic clients. Run by every node's
   * housekeeping; the removals are conditional, so nodes running it together do no harm.
   * @returns the removed clients' ids
   */
  async removeUnused(now = nowSeconds()): Promise<string[]> {
    const days = this.services.config.registration.unusedClientDays;
    const removed = days === 0 ? [] : await this.services.admin.deleteUnused(now - days * DAY, now, REMOVAL_BATCH);
    for (const id of removed)
      this.services.events.emit({ name: 'client_deleted', endpoint: 'housekeeping', clientId: id });
    this.dynamic = new Set(await this.store.ids());
    for (const id of this.touched.keys()) if (!this.dynamic.has(id)) this.touched.delete(id);
    if (removed.length > 0) await this.services.reload();
    return removed;
  }

  /** The metadata checked, with its sector identifier document (OIDC Core §8.1). */
  private async check(body: unknown): Promise<CheckedMetadata> {
    const checked = checkMetadata(body, this.policy());
    if (checked.sectorIdentifierUri !== undefined) {
      let listed: unknown;
      try {
        listed = JSON.parse(await this.services.fetchText(checked.sectorIdentifierUri));
      } catch {
        throw new OAuthError('invalid_client_metadata', 'sector_identifier_uri could not be fetched as JSON');
      }
      if (!Array.isArray(listed))
        throw new OAuthError(
          'invalid_client_metadata',
          'sector_identifier_uri must serve a JSON array of redirect URIs',
        );
      const missing = (checked.metadata.redirect_uris as string[]).find((u) => !listed.includes(u));
      if (missing !== undefined)
        throw new OAuthError('invalid_redirect_uri', 'a redirect URI is not listed at sector_identifier_uri');
    }
    return checked;
  }

  /** A write of `ClientAdmin`, its refusal of a client the config file's rules refuse as `invalid_client_metadata`. */
  private async admin<T>(write: (admin: ClientAdmin) => Promise<T>): Promise<T> {
    try {
      return await write(this.services.admin);
    } catch (err) {
      if (err instanceof AdminError)
        throw new OAuthError(
          'invalid_client_metadata',
          err.message.replace(/^invalid configuration:\s*/, '').replace(/clients\[\d+\]\./g, ''),
        );
      throw err;
    }
  }

  /** The stored form of a dynamic client, from the registry (reloaded once when this node has not seen it yet). */
  private async current(clientId: string): Promise<{ clientSecrets: string[] }> {
    let client = this.services.clients.get(clientId);
    if (!client) {
      await this.services.reload();
      client = this.services.clients.get(clientId);
    }
    if (!client) throw unauthorized('unknown client');
    return client;
  }

  /**
   * The initial access token whose registration count applies: its hash, and for an access token
   * used for the first time the row to record (with `registrationsPerAccessToken`) once the
   * registration is otherwise good; undefined for open registration without a token.
   */
  private async initialTokenSlot(
    token: string | undefined,
    now: number,
  ): Promise<{ hash: string; first?: InitialAccessToken } | undefined> {
    if (token === undefined) {
      if (this.services.config.registration.open) return undefined;
      throw unauthorized();
    }
    const hash = hashHandle(token);
    let row = await this.store.findInitialToken(hash);
    let first: InitialAccessToken | undefined;
    if (row?.kind !== 'minted') {
      const valid = await this.services.tokens.validateAccessToken(token);
      // A removed client's tokens end with it (RFC 7592 §2.3), also its JWTs without a stored mark.
      if (!valid || !this.services.clients.stillIssuesTo(valid.claims.client_id, valid.claims.iat))
        throw unauthorized('the initial access token is invalid or expired');
      // RFC 9449 §7.2: a DPoP-bound token is no bearer token.
      if (boundKey(valid.claims) !== undefined) throw unauthorized('a DPoP-bound access token is not accepted here');
      if (!(valid.claims.scope ?? '').split(' ').includes(REGISTER_SCOPE))
        throw new OAuthError('insufficient_scope', `the access token needs the scope ${REGISTER_SCOPE}`, 403, {
          'www-authenticate': `Bearer error="insufficient_scope", scope="${REGISTER_SCOPE}"`,
        });
      if (!row) {
        const exp = Number(valid.claims.exp);
        row = first = {
          tokenHash: hash,
          kind: 'access_token',
          maxRegistrations: this.services.config.registration.registrationsPerAccessToken,
          registrations: 0,
          expiresAt: Number.isFinite(exp) ? exp : now + 3600,
        };
      }
    }
    if (row.expiresAt <= now) throw unauthorized('the initial access token is expired');
    if (row.registrations >= row.maxRegistrations) throw unauthorized('the initial access token is used up');
    return { hash, ...(first ? { first } : {}) };
  }

  /** The registration of `clientId` when `token` is its registration access token. */
  private async authorize(clientId: string, token: string | undefined): Promise<ClientRegistration> {
    if (token === undefined) throw unauthorized();
    const registration = await this.store.find(clientId);
    // RFC 7592 §2.1: an unknown client is answered 401 like a wrong token.
    if (!registration || !sameHash(hashHandle(token), registration.tokenHash))
      throw unauthorized('the registration access token is invalid');
    return registration;
  }

  /** The response body: identifiers, endpoints and the registered metadata. */
  private response(registration: ClientRegistration, extra: Record<string, unknown>): RegistrationResponse {
    const confidential = ['client_secret_basic', 'client_secret_post'].includes(
      String(registration.metadata.token_endpoint_auth_method),
    );
    return {
      client_id: registration.clientId,
      client_id_issued_at: registration.issuedAt,
      // RFC 7591 §3.2.1: required with a secret; 0 = it does not expire.
      ...(confidential ? { client_secret_expires_at: 0 } : {}),
      ...extra,
      registration_client_uri: this.clientUri(registration.clientId),
      ...registration.metadata,
    };
  }
}

/** The prefix of minted initial access tokens, so that secret scanners and people can tell them. */
export const INITIAL_TOKEN_PREFIX = 'sigil_iat_';

/**
 * Mints an initial access token (RFC 7591 §3) for `sigil clients initial-token`: `sigil_iat_` and
 * 256 random bits (base64url), stored as its SHA-256 only, good for `maxRegistrations`
 * registrations until `lifetimeSeconds` from `now`.
 * @returns the token (shown once) and its expiry, Unix seconds
 */
export async function mintInitialToken(
  store: RegistrationStore,
  maxRegistrations: number,
  lifetimeSeconds: number,
  now = nowSeconds(),
): Promise<{ token: string; expiresAt: number }> {
  const token = `${INITIAL_TOKEN_PREFIX}${newHandle()}`;
  const expiresAt = now + lifetimeSeconds;
  await store.addInitialToken({
    tokenHash: hashHandle(token),
    kind: 'minted',
    maxRegistrations,
    registrations: 0,
    expiresAt,
  });
  return { token, expiresAt };
}

/** Compares two base64url SHA-256 hashes in constant time. */
function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A stored `sha256:<base64>` secret as the base64url hash `hashHandle` gives. */
function digestToHandleHash(stored: string): string {
  return Buffer.from(stored.slice('sha256:'.length), 'base64').toString('base64url');
}
