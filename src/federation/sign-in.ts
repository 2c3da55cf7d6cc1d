/**
 * Sign-in through an upstream provider, as the federation pages (ui/federation.ts) drive it: the
 * start sends the browser upstream and remembers, under the `state` it sends, what the callback
 * needs (single use, bound to the browser and the pending request); the callback checks that
 * `state`, completes the upstream sign-in (`UpstreamProviders.finish`) and links the external
 * user to a local subject through the user admin (`UserAdmin.linkUpstream`). The session and the resumed
 * request are the
 * pages' and the interaction outcomes' business.
 */
import type { Logger } from 'pino';
import type { ClientRegistry } from '../clients/registry.js';
import { nowSeconds } from '../crypto/handles.js';
import type { FederationStates, PostedCallback } from '../stores/records/federation-states.js';
import type { Interaction, Interactions } from '../stores/records/interactions.js';
import type { User } from '../users/users.js';
import { mappedClaims, ownedClaims, upstreamSubject, type UpstreamProviders } from './upstream.js';

/** Seconds a browser has to come back from the upstream provider. */
const UPSTREAM_TIMEOUT = 600;

/** Longest `state` accepted at the callback (ours are 43 characters). */
const MAX_STATE_LENGTH = 200;
/** Longest posted `code` or `error` kept (Apple's codes are under 100 characters). */
const MAX_POSTED_FIELD = 2_000;

/**
 * Where a step of an upstream sign-in ended up:
 * - `expired`: the pending request is unknown, expired, another browser's, or its client may not
 *   use the provider;
 * - `failed`: the upstream sign-in cannot go on, `description` says why in the words of an OAuth
 *   `error_description`; `interaction` is the pending request once it is known;
 * - `redirect`: the start, to send the browser to `url` at the upstream provider;
 * - `signed_in`: the callback, with the linked active local user, the verified upstream claims
 *   and the pending request to resume.
 */
export type UpstreamStep =
  | { outcome: 'expired' }
  | { outcome: 'failed'; description: string; interaction?: Interaction }
  | { outcome: 'redirect'; url: string }
  | { outcome: 'signed_in'; user: User; claims: Record<string, unknown>; pending: PendingSignIn };

/** The pending request an upstream sign-in resumes: its id and its record. */
export interface PendingSignIn {
  id: string;
  interaction: Interaction;
}

/** The callback's query as the upstream provider sent it back. */
export interface UpstreamCallback {
  /** The `state` parameter, when sent once. */
  state: string | undefined;
  /** The `error` parameter of an error response (OIDC Core §3.1.2.6), when sent once. */
  error: string | undefined;
  /** The request's URL as received (path and query): its query goes to the code exchange and its checks. */
  url: string;
}

/**
 * Where an upstream identity becomes a local user: the user admin (`UserAdmin.linkUpstream`), the
 * one writer of users, which finds or creates the user linked to (provider, upstream `sub`) and
 * writes the mapped claims.
 */
export interface UpstreamUserLinks {
  linkUpstream(
    provider: string,
    sub: string,
    claims: Record<string, unknown>,
    tenant: string | null,
    owned?: readonly string[],
    linkByEmail?: boolean,
  ): Promise<User>;
}

/** What the sign-in through upstream providers stands on. */
export interface UpstreamSignInDeps {
  upstream: UpstreamProviders;
  states: FederationStates;
  interactions: Interactions;
  /** Writes the linked local user (the one writer of users). */
  users: UpstreamUserLinks;
  clients: ClientRegistry;
  log: Logger;
}

/** Starts and completes sign-ins at upstream OpenID providers for pending requests. */
export class UpstreamSignIn {
  constructor(private readonly deps: UpstreamSignInDeps) {}

  /**
   * Starts a sign-in at provider `name` for this browser's pending request `interactionId`: builds
   * the upstream authorization request and stores its `state`, nonce and PKCE verifier for
   * `UPSTREAM_TIMEOUT` seconds.
   * @param browser the browser id's hash
   * @returns `redirect`, `expired` (no such request or provider, or one the client may not use), or
   *   `failed` when the provider cannot be discovered
   */
  async start(name: string, interactionId: string | undefined, browser: string): Promise<UpstreamStep> {
    const { upstream, interactions, states, log } = this.deps;
    const interaction = await interactions.get(interactionId, browser);
    const provider = upstream.get(name);
    if (!interactionId || !interaction || !provider || !this.providerAllowed(interaction, name))
      return { outcome: 'expired' };
    let request;
    try {
      request = await upstream.start(provider);
    } catch (err) {
      log.warn({ err, provider: name }, 'upstream provider unreachable');
      return { outcome: 'failed', description: 'the identity provider cannot be reached', interaction };
    }
    const now = nowSeconds();
    await states.put(request.state, {
      clientId: interaction.request.clientId,
      data: { provider: name, interactionId, nonce: request.nonce, codeVerifier: request.codeVerifier, browser },
      createdAt: now,
      expiresAt: now + UPSTREAM_TIMEOUT,
    });
    return { outcome: 'redirect', url: request.url };
  }

  /**
   * Receives a form_post answer (Apple's, response_mode=form_post): a cross-site POST, which
   * carries none of the browser's SameSite=Lax cookies, so nothing is decided here. Its fields
   * are kept with the sign-in of its `state` (once), and the browser is sent on by a 303 to the
   * callback with that `state` alone: a top-level GET, which carries the cookies, and `complete`
   * checks the browser there as for any callback.
   * @returns the path to send the browser to, or undefined for an unknown, used, expired or
   *   already posted `state`, or fields that are too long.
   */
  async receivePost(name: string, state: string | undefined, posted: PostedCallback): Promise<string | undefined> {
    if (!state || state.length > MAX_STATE_LENGTH) return undefined;
    const fields = Object.entries(posted).filter(([, v]) => v !== undefined);
    if (fields.some(([, v]) => v.length > MAX_POSTED_FIELD)) return undefined;
    if (!(await this.deps.states.post(state, name, Object.fromEntries(fields), nowSeconds()))) return undefined;
    return `/federation/${encodeURIComponent(name)}/callback?${new URLSearchParams({ state })}`;
  }

  /**
   * Completes a sign-in at provider `name` when the browser comes back: the `state` must be
   * live, unused, this provider's and this browser's (it is used up here); the upstream's
   * answer is verified, its `sub` (at most 255 characters, OIDC Core §2, never cut) linked to a
   * local user, whose mapped claims are refreshed. No user is created when a check fails.
   * @param browser the browser id's hash, asked for once the `state` is plausible
   * @returns `signed_in` for an active user; `expired` when the pending request has gone; else
   *   `failed`
   */
  async complete(name: string, callback: UpstreamCallback, browser: () => string): Promise<UpstreamStep> {
    const { upstream, interactions, states, log } = this.deps;
    const provider = upstream.get(name);
    const state = callback.state;
    if (!provider || !state || state.length > MAX_STATE_LENGTH) return failed('the sign-in response is not valid');
    const row = await states.find(state);
    const data = row?.data;
    const id = browser();
    if (!row || !data || data.provider !== name || data.browser !== id)
      return failed('the sign-in response does not belong to this browser');
    if (!(await states.consume(state, nowSeconds())))
      return failed('the sign-in response was already used or has expired');
    const interaction = await interactions.get(data.interactionId, id);
    if (!interaction) return { outcome: 'expired' };

    let claims: Record<string, unknown>;
    const posted = data.posted;
    const error = posted ? posted.error : callback.error;
    try {
      const base = upstream.callbackUrl(name);
      // A form_post answer's fields were kept by `receivePost`; the GET that follows carries only its state.
      const search = posted
        ? `?${new URLSearchParams({ state, ...(posted.code ? { code: posted.code } : {}), ...(posted.error ? { error: posted.error } : {}) })}`
        : new URL(callback.url, base).search;
      const url = new URL(`${base}${search}`);
      const pending = { state, nonce: data.nonce, codeVerifier: data.codeVerifier };
      claims = await upstream.finish(provider, url, pending, posted?.user ? { user: posted.user } : {});
    } catch (err) {
      log.warn({ err, provider: name }, 'upstream sign-in failed');
      const because = error
        ? `the identity provider answered ${error}`
        : 'the identity provider sign-in could not be verified';
      return failed(because, interaction);
    }
    const sub = upstreamSubject(claims);
    if (sub === undefined) {
      log.warn({ provider: name }, 'upstream subject refused: longer than 255 characters or not a string');
      return failed('the identity provider sent an invalid subject identifier', interaction);
    }
    const user = await this.deps.users.linkUpstream(
      provider.name,
      sub,
      mappedClaims(provider, claims),
      interaction.request.tenant,
      ownedClaims(provider),
      provider.linkVerifiedEmail,
    );
    if (!user.isActive) return failed('the account is not active', interaction);
    return { outcome: 'signed_in', user, claims, pending: { id: data.interactionId, interaction } };
  }

  /** Whether the pending request's client may use provider `name` (its `identityProviderRestrictions`, empty = all). */
  private providerAllowed(interaction: Interaction, name: string): boolean {
    const client = this.deps.clients.get(interaction.request.clientId);
    if (!client) return interaction.device !== undefined;
    return client.identityProviderRestrictions.length === 0 || client.identityProviderRestrictions.includes(name);
  }
}

function failed(description: string, interaction?: Interaction): UpstreamStep {
  return { outcome: 'failed', description, ...(interaction ? { interaction } : {}) };
}
