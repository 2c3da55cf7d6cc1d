/**
 * Pending authorization requests waiting for a page (login, second factor, consent, an upstream
 * provider), an OpenID client's, a device's or a SAML service provider's, as `interaction` grant rows. Each is stored under the SHA-256 of a random id, bound
 * to the browser that started it (another browser cannot take it over), and lives
 * `INTERACTION_LIFETIME` seconds. Pages carry only the id, never a return URL, so there is nothing
 * to redirect openly to. The flow around them (quotas, decisions, outcomes) is src/interaction/'s.
 */
import type { ResponseTarget } from '../../http/authorization-response.js';
import type { AuthorizationDetail } from './grant-data.js';
import { hashHandle, newHandle, nowSeconds } from '../../crypto/handles.js';
import { type GrantStore, newGrantRecord } from '../grant-store.js';

/** How long a pending request waits for the user, in seconds. */
export const INTERACTION_LIFETIME = 600;

/**
 * What pages and outcomes need of a pending request, taken from its validation when it was
 * stored (`validateAuthorizeRequest`, or a device's stored authorization): pages never validate
 * the request again.
 */
export interface PendingRequest {
  clientId: string;
  /**
   * Where the answer goes: the validated redirect URI, response mode and `state` (RFC 6749
   * §4.1.2). Absent for a device's request, which learns the answer by polling (RFC 8628 §3.5).
   */
  target?: ResponseTarget;
  /**
   * The scopes consent is asked for, in request order (`offline_access` only where a code is returned, OIDC
   * Core §11).
   */
  scopes: string[];
  /** `ui_locales` (OIDC Core §3.1.2.1), as sent. */
  uiLocales?: string;
  /** `login_hint` (OIDC Core §3.1.2.1): pre-fills the login page. */
  loginHint?: string;
  /** The tenant of `acr_values=tenant:<name>`: users are looked up there only. */
  tenant: string | null;
  /** The plain values of `acr_values` (without `idp:` and `tenant:`), in order of preference. */
  acrValues: string[];
  /** The values an essential `acr` claim request accepts (OIDC Core §5.5.1.1), when sent. */
  essentialAcr?: unknown[];
  /** The organization `organization=<name>` named (stable id and name), when sent. */
  organization?: { id: string; name: string };
  /** The authorization details of the request (RFC 9396 §2), shown on the consent page. */
  authorizationDetails?: AuthorizationDetail[];
}

/**
 * A SAML service provider's request waiting for the pages (interaction/saml.ts): whom to answer,
 * where, and what it asked (SAML Core §3.4.1), as its validation left it.
 */
export interface SamlPending {
  entityId: string;
  /** The registered ACS URL the Response goes to. */
  acsUrl: string;
  /** The AuthnRequest's ID (InResponseTo); absent for an IdP-initiated sign-in. */
  requestId?: string;
  relayState?: string;
  forceAuthn: boolean;
  isPassive: boolean;
  /** The SP asked for MFA (REFEDS MFA). */
  mfa: boolean;
  /** The user cancelled or declined: the SP gets a Response saying so. */
  denied?: boolean;
}

/** A pending authorization request. */
export interface Interaction {
  /** The validated request, as pages need it. */
  request: PendingRequest;
  /**
   * The authorization request's effective parameters, validated again by the authorization
   * endpoint when the request resumes (a device's: its `client_id` and `scope` only).
   */
  params: Record<string, string>;
  /** SHA-256 of the browser id that started it. */
  browser: string;
  /** Unix seconds of a login done for this request (prompt=login and max_age are then met). */
  loginAt?: number;
  /** Scopes the user consented to for this request. */
  consented?: string[];
  /** The stable id of the organization the user picked for this request (`/account/organization`). */
  pickedOrganization?: string;
  /** Set when the request is a device's (RFC 8628 §3.3): the device code and user code rows. */
  device?: { deviceKey: string; userCodeKey: string };
  /** Set when the request is a SAML service provider's (its `request.clientId` is `saml:<entity ID>`). */
  saml?: SamlPending;
}

/** Stores, reads and updates pending requests. */
export class Interactions {
  constructor(private readonly grants: GrantStore) {}

  /** Stores a new pending request; returns its id. */
  async create(clientId: string, interaction: Interaction): Promise<string> {
    const id = newHandle();
    const now = nowSeconds();
    await this.grants.put(
      newGrantRecord({
        key: hashHandle(id),
        type: 'interaction',
        clientId,
        data: { ...interaction },
        createdAt: now,
        expiresAt: now + INTERACTION_LIFETIME,
      }),
    );
    return id;
  }

  /**
   * The live pending request `id` of this browser, or undefined. A record stored before pending
   * requests kept their validated `request` (at most `INTERACTION_LIFETIME` old at an upgrade)
   * counts as expired.
   */
  async get(id: string | undefined, browser: string): Promise<Interaction | undefined> {
    if (!id || id.length > 100) return undefined;
    const row = await this.grants.get(hashHandle(id));
    if (row?.type !== 'interaction' || row.revokedAt !== null || row.consumedAt !== null) return undefined;
    if (row.expiresAt <= nowSeconds()) return undefined;
    const data = row.data as unknown as Partial<Interaction>;
    return data.browser === browser && data.request !== undefined ? (data as Interaction) : undefined;
  }

  /** Saves changes to a pending request. */
  async update(id: string, interaction: Interaction): Promise<void> {
    await this.grants.update(hashHandle(id), { ...interaction }, nowSeconds() + INTERACTION_LIFETIME);
  }

  /** Ends a pending request once answered; returns false when it was already answered. */
  async finish(id: string): Promise<boolean> {
    return this.grants.consume(hashHandle(id), nowSeconds());
  }
}
