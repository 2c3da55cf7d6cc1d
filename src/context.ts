/**
 * The services of one Sigil instance, handed to every endpoint and grant (DESIGN §1).
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from './config/loader.js';
import type { EventBus } from './events/events.js';
import type { GrantRegistry } from './grants/registry.js';
import type { KeyRing } from './keys/keys.js';
import type { Store } from './stores/types.js';
import type { TokenService } from './tokens/tokens.js';
import type { UserService } from './users/users.js';
import type { ApiSecrets, ClientRegistry } from './validation/client-auth.js';
import type { FailureLimiter } from './validation/failure-limiter.js';
import type { Resources } from './validation/scopes.js';
import type { ResourceOwnerValidator } from './grants/password.js';
import type { Interactions } from './endpoints/interactions.js';
import type { Pages } from './ui/pages.js';
import type { SessionService } from './users/sessions.js';
import type { UpstreamProviders } from './federation/upstream.js';
import type { MfaService } from './mfa/factors.js';

/** One running provider's services. */
export interface SigilContext {
  config: ResolvedConfig;
  issuer: string;
  store: Store;
  keys: KeyRing;
  clients: ClientRegistry;
  resources: Resources;
  users: UserService;
  tokens: TokenService;
  grantTypes: GrantRegistry;
  events: EventBus;
  limiter: FailureLimiter;
  /** API resource name → its secrets' SHA-256 digests and whether they are all long (introspection callers). */
  apiSecrets: Map<string, ApiSecrets>;
  resourceOwnerValidator: ResourceOwnerValidator;
  sessions: SessionService;
  interactions: Interactions;
  pages: Pages;
  upstream: UpstreamProviders;
  /** Users' second factors and the second sign-in step (src/mfa/). */
  mfa: MfaService;
  log: Logger;
}
