/**
 * The services of one Sigil instance, in groups, each built by its own builder (src/compose/):
 * infrastructure (configuration, storage, counters, keys, log, events), the protocol core
 * (clients, resources, upstream providers, organizations, tokens, proofs, pending requests, logout, SAML), sign-in
 * (users, sessions, second factors, passkeys, self-service), mail, pages (the page kit) and
 * management (the admin services and dynamic client registration). No module takes them all: each endpoint, grant,
 * page and service names the members it uses, as a `Pick<Services, ...>` of its own.
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from './config/loader.js';
import type { EventBus } from './events/events.js';
import type { KeyRing } from './keys/keys.js';
import type { Store } from './stores/types.js';
import type { TokenService } from './tokens/tokens.js';
import type { UserService } from './users/users.js';
import type { ApiSecrets, ClientRegistry } from './clients/registry.js';
import type { ClientKeys } from './clients/client-keys.js';
import type { FailureLimiter } from './limits/failure-limiter.js';
import type { DPoPVerifier } from './validation/dpop.js';
import type { ReplayCache } from './limits/replay-cache.js';
import type { Resources } from './resources/scopes.js';
import type { Interactions } from './stores/records/interactions.js';
import type { Pages } from './page-kit/pages.js';
import type { SessionService } from './users/sessions.js';
import type { KnownBrowsers } from './users/known-browsers.js';
import type { UpstreamProviders } from './federation/upstream.js';
import type { UpstreamSignIn } from './federation/sign-in.js';
import type { MfaService } from './mfa/factors.js';
import type { FactorEnrollment } from './mfa/enrollment.js';
import type { SecondStepService } from './mfa/second-step.js';
import type { LogoutService } from './logout/logout.js';
import type { WebAuthnService } from './mfa/webauthn.js';
import type { PasskeyCeremonies } from './mfa/passkey-ceremonies.js';
import type { ClientRegistrations } from './admin/registrations.js';
import type { SamlServiceProviderAdmin } from './admin/saml-service-providers.js';
import type { AccountEmail } from './email/account-email.js';
import type { AccountService } from './users/account.js';
import type { ClientAdmin } from './admin/clients.js';
import type { KeyAdmin } from './admin/keys.js';
import type { SessionAdmin } from './admin/sessions.js';
import type { AuditLog } from './admin/audit.js';
import type { GrantAdmin } from './admin/grants.js';
import type { ResourceAdmin } from './admin/resources.js';
import type { UserAdmin } from './admin/users.js';
import type { OrganizationScim } from './scim/organization.js';
import type { ScimService } from './scim/service.js';
import type { OrganizationAdmin } from './admin/organizations.js';
import type { OrganizationInvitations } from './email/organization-invitations.js';
import type { Organizations } from './organizations/registry.js';
import type { SamlIdentityProvider } from './saml/identity-provider.js';
import type { WebhookAdmin } from './admin/webhooks.js';
import type { SyncHooks } from './webhooks/hooks.js';

/** The admin services (src/admin/) as the management API uses them on a running node. */
export interface Management {
  clients: ClientAdmin;
  keys: KeyAdmin;
  sessions: SessionAdmin;
  /** The one writer of the stored users, with their rules (names, password policy, sign-out, audit); second factors. */
  users: UserAdmin;
  /** SCIM 2.0 users and groups (RFC 7643, RFC 7644). */
  scim: ScimService;
  /** SCIM 2.0 per organization: each organization's members and roles (/scim/v2/organizations/{name}). */
  organizationScim: OrganizationScim;
  /** The stored audit events. */
  audit: AuditLog;
  /** Users' consents and refresh token grants. */
  grants: GrantAdmin;
  /**
   * Identity resources, API scopes and resources, upstream providers managed at run time; each
   * change is in force on this node when it returns (it reloads `resources`, `apiSecrets` and
   * `upstream`), on the others within about a second.
   */
  resources: ResourceAdmin;
  /**
   * Organizations (config-file read-only, stored ones managed) and the members of every one; each
   * change of an organization is in force on this node when it returns (it reloads
   * `organizations`), on the others within about a second.
   */
  organizations: OrganizationAdmin;
  /**
   * Webhooks (config-file read-only, stored ones managed), their delivery log, retries and pings;
   * each change is in force on this node when it returns, on the others within about a second.
   */
  webhooks: WebhookAdmin;
  /**
   * SAML service providers (config-file read-only, stored ones managed); each change is in force
   * on this node when it returns (it reloads the SSO endpoints' registry), on the others within
   * about a second.
   */
  samlServiceProviders: SamlServiceProviderAdmin;
  /** Re-reads the stored clients on this node now (other nodes do within `signingKeys.reloadSeconds`). */
  reloadClients(): Promise<void>;
  /** Re-reads the signing keys on this node now. */
  reloadKeys(): Promise<void>;
}

/** What every part stands on: the configuration, where Sigil is served, storage, counters, keys, log and events. */
export interface Infrastructure {
  config: ResolvedConfig;
  issuer: string;
  /**
   * The issuer's path, '' when the issuer has none (`https://example.com/id` → `/id`): where the
   * routes are mounted. Redirects to Sigil's own pages and the pages' links start with it.
   */
  basePath: string;
  store: Store;
  keys: KeyRing;
  events: EventBus;
  limiter: FailureLimiter;
  /** One-time identifiers (client assertion and DPoP proof `jti`s), shared by every node of the store. */
  replay: ReplayCache;
  log: Logger;
}

/** The protocol core: clients, resources, upstream providers, organizations, tokens, proofs, pending requests, logout and SAML. */
export interface ProtocolServices {
  clients: ClientRegistry;
  /**
   * Identity resources, API scopes and API resources: the config file's, the built-in management
   * API's and the stored ones (`management.resources`); the same object for the server's life,
   * its maps replaced on each change (`Resources.sourceOf` tells where an item is defined).
   */
  resources: Resources;
  /** The synchronous hooks (preToken, postLogin, preRegistration): receivers of the config or a library user's functions. */
  hooks: SyncHooks;
  tokens: TokenService;
  /** Clients' public keys (`jwks`, `jwksUri`) for client assertions and request objects. */
  clientKeys: ClientKeys;
  /** DPoP proofs (RFC 9449) at the token endpoint and userinfo. */
  dpop: DPoPVerifier;
  /**
   * API resource name → its secrets' SHA-256 digests and whether they are all long (introspection
   * callers); config-file and stored API resources, changed in place on each change.
   */
  apiSecrets: Map<string, ApiSecrets>;
  /** Session participants and logout notifications (back- and front-channel). */
  logout: LogoutService;
  interactions: Interactions;
  /** Upstream OpenID Connect providers: the config file's and the stored ones (`UpstreamProviders.sourceOf`). */
  upstream: UpstreamProviders;
  /**
   * The organizations in force, by name, stable id and email domain: the config file's and the
   * stored ones (`management.organizations`); the same object for the server's life.
   */
  organizations: Organizations;
  /**
   * The SAML 2.0 identity provider: the config file's service providers, metadata, AuthnRequests
   * and Responses (src/saml/); its routes exist only with `saml.enabled`.
   */
  saml: SamlIdentityProvider;
}

/** Signing users in and their self-service: users, sessions, second factors, passkeys. */
export interface SignInServices {
  users: UserService;
  sessions: SessionService;
  /** Browsers known for a user by an earlier password sign-in (their share of a directory's wrong binds). */
  knownBrowsers: KnownBrowsers;
  /**
   * Sign-ins at the upstream providers: their `state`, the code exchange, the link to a local user
   * (src/federation/sign-in.ts).
   */
  federation: UpstreamSignIn;
  /** Users' second factors and the second sign-in step (src/mfa/). */
  mfa: MfaService;
  /** The second sign-in step: what follows the first factor, and one-time code checks (src/mfa/second-step.ts). */
  secondStep: SecondStepService;
  /** Adding authenticator apps, recovery codes, removing factors (src/mfa/enrollment.ts). */
  enrollment: FactorEnrollment;
  /** WebAuthn ceremonies: passkeys and security keys. */
  webauthn: WebAuthnService;
  /** Passkeys and security keys as the pages use them: quotas, limits, the security key step, events. */
  passkeys: PasskeyCeremonies;
  /** Self-service on /account: password, sessions, connected apps, profile. */
  account: AccountService;
}

/** Mail: built after management, whose user admin checks the names self-registration asks for. */
export interface MailServices {
  /** Links by mail: password reset, address verification, self-registration; absent without config `email`. */
  email?: AccountEmail;
  /** Invitations to organizations by mail; sending one needs config `email`, listing and revoking do not. */
  invitations: OrganizationInvitations;
}

/** The page kit: templates, languages, the look. */
export interface PageServices {
  pages: Pages;
}

/** The admin services: /admin/v1, /admin, /scim/v2. */
export interface ManagementServices {
  management: Management;
  /** Dynamic client registration and management (RFC 7591/7592, src/admin/registrations.ts). */
  registrations: ClientRegistrations;
}

/**
 * One running provider's services, every group together: only the composition root (src/index.ts,
 * src/compose/) holds it whole; everything else takes a `Pick` of it.
 */
export type Services = Infrastructure &
  ProtocolServices &
  SignInServices &
  MailServices &
  PageServices &
  ManagementServices;
