/**
 * What the validation of an authorization request needs of a running provider, and nothing more:
 * declared here, typed from the layers below validation/, so that this folder depends on no
 * higher layer. The services (`Services`) satisfy it as they are.
 */
import type { ClientKeys } from '../../clients/client-keys.js';
import type { ClientRegistry } from '../../clients/registry.js';
import type { Config } from '../../config/schema.js';
import type { Resources } from '../../resources/scopes.js';
import type { GrantRecords } from '../../stores/records/index.js';

/** Checks an `id_token_hint` (OIDC Core §3.1.2.1): one of this provider's own identity tokens. */
export interface IdTokenHintVerifier {
  /** The hint's subject when Sigil issued it (expired ones included), else undefined; never throws. */
  verifyIdTokenHint(token: string): Promise<{ sub: string } | undefined>;
}

/** Finds an organization in force by its name (`Organizations.byName`). */
export interface OrganizationLookup {
  /** The organization named `name` (its stable id and name), or undefined. */
  byName(name: string): { id: string; name: string } | undefined;
}

/** The services `validateAuthorizeRequest` uses. */
export interface AuthorizeValidationServices {
  /** The enabled clients, by `client_id` (and clients of metadata documents). */
  clients: Pick<ClientRegistry, 'resolve'>;
  /** Identity and API scopes, API resources by resource indicator. */
  resources: Resources;
  /** Clients' public keys, for signed request objects (RFC 9101 §6.1). */
  clientKeys: Pick<ClientKeys, 'forClient' | 'guardedGet'>;
  /** Sigil's issuer: the `aud` a request object must name (OIDC Core §6.1). */
  issuer: string;
  /** Whether every client must push its requests first (RFC 9126 §6). */
  config: Pick<Config, 'requirePushedAuthorizationRequests'>;
  /** The grants, where pushed requests wait to be taken once (RFC 9126 §4). */
  store: { records: Pick<GrantRecords, 'pushedRequests'> };
  /** The verifier of `id_token_hint`s. */
  tokens: IdTokenHintVerifier;
  /** The organizations in force, which `organization=<name>` names. */
  organizations: OrganizationLookup;
}
