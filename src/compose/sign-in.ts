/**
 * Builds the sign-in group: users (config, stored and directory users), sessions, known browsers,
 * second factors, WebAuthn and passkeys, and self-service on /account.
 */
import { isIP } from 'node:net';
import { ConfigError, type ResolvedConfig } from '../config/loader.js';
import { productName } from '../config/product-name.js';
import { UpstreamSignIn } from '../federation/sign-in.js';
import { FactorEnrollment } from '../mfa/enrollment.js';
import { MfaService } from '../mfa/factors.js';
import { PasskeyCeremonies } from '../mfa/passkey-ceremonies.js';
import { SecondStepService } from '../mfa/second-step.js';
import { relyingPartyOf, WebAuthnService } from '../mfa/webauthn.js';
import { AccountService } from '../users/account.js';
import type { UserDirectory } from '../users/directory.js';
import { KnownBrowsers } from '../users/known-browsers.js';
import { LdapDirectory } from '../users/ldap/ldap-directory.js';
import { SessionService } from '../users/sessions.js';
import { UserService } from '../users/users.js';
import type { Infrastructure, ProtocolServices, SignInServices } from '../services.js';
import type { SigilOptions } from './options.js';

/** The sign-in group and the user directories it asks (the user admin checks names against them too). */
export interface BuiltSignIn {
  signIn: SignInServices;
  /** The config's directories (LDAP), then the library user's, in the order they are asked. */
  directories: UserDirectory[];
}

/**
 * The user directories: the config's `userDirectories` (LDAP), then `options.userDirectories`.
 * @throws ConfigError naming a library directory without `findByUsername`: without it a directory
 *   could not say which names it holds, and a stored user could take one of its users' names
 *   (plain JavaScript callers have no type check to tell them)
 */
function userDirectories(infra: Infrastructure, options: SigilOptions): UserDirectory[] {
  const own = options.userDirectories ?? [];
  const lacking = own
    .filter((d) => typeof d.findByUsername !== 'function')
    .map((d) => `userDirectories: "${String(d.name)}" has no findByUsername(username) (see UserDirectory)`);
  if (lacking.length > 0) throw new ConfigError(lacking);
  return [...infra.config.userDirectories.map((d) => new LdapDirectory(d, infra.limiter)), ...own];
}

/**
 * Builds the sign-in group.
 * @param configUsers the config's users with their clear-text passwords, which are hashed here
 *   (the infrastructure's `config` has them dropped)
 * @throws ConfigError as `userDirectories`; Error when a config user's password cannot be hashed
 */
export async function buildSignIn(
  infra: Infrastructure,
  protocol: Pick<ProtocolServices, 'clients' | 'logout' | 'upstream' | 'interactions'>,
  configUsers: ResolvedConfig['users'],
  options: SigilOptions,
): Promise<BuiltSignIn> {
  const { config: cfg, store, keys, limiter, events, log } = infra;
  const { clients, logout, upstream, interactions } = protocol;
  const directories = userDirectories(infra, options);
  const profile = options.profileService;
  const users = await UserService.create(configUsers, store.users, { directories, isActive: profile?.isActive?.bind(profile), emails: store.emails, log });
  // WebAuthn credentials count as second factors while WebAuthn is on (FACTOR_KINDS).
  const mfa = new MfaService(store.factors, store.records, cfg.mfa, options.dataKey, cfg.webauthn.enabled ? store.webauthn : undefined);
  const webauthn = new WebAuthnService(store, relyingPartyOf(cfg.issuer, cfg.webauthn.rpName), cfg.webauthn.challengeLifetime);
  // Browsers refuse an IP address as RP ID (WebAuthn L3 §5.1.3).
  if (cfg.webauthn.enabled && isIP(webauthn.rp.id.replace(/^\[|\]$/g, '')) !== 0)
    log.warn({ rpId: webauthn.rp.id }, 'webauthn is enabled but the issuer host is an IP address: browsers will refuse passkeys; use a domain name such as localhost');
  const signIn: SignInServices = {
    users,
    sessions: new SessionService(store.records.sessions, cfg.sessionLifetime, logout),
    knownBrowsers: new KnownBrowsers(keys, cfg.issuer, cfg.knownBrowserLifetime),
    federation: new UpstreamSignIn({ upstream, states: store.records.federationStates, interactions, users: store.users, clients, log }),
    mfa,
    secondStep: new SecondStepService(mfa, users, clients, limiter, events),
    enrollment: new FactorEnrollment(mfa, users, limiter, events),
    webauthn,
    passkeys: new PasskeyCeremonies(webauthn, store.webauthn, store.records.webauthnPending, mfa, users, limiter, events, cfg.webauthn),
    account: new AccountService(users, store.users, store.records, store.emails, logout, clients, limiter, events, cfg.account.editableClaims, productName(cfg)),
  };
  return { signIn, directories };
}
