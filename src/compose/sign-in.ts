/**
 * Builds the sign-in group: users (config, stored and directory users), sessions, known browsers,
 * second factors, WebAuthn and passkeys, and self-service on /account.
 */
import { isIP } from 'node:net';
import type { UserAdmin } from '../admin/users.js';
import { UpstreamSignIn } from '../federation/sign-in.js';
import { FactorEnrollment } from '../mfa/enrollment.js';
import { MfaService } from '../mfa/factors.js';
import { PasskeyCeremonies } from '../mfa/passkey-ceremonies.js';
import { SecondStepService } from '../mfa/second-step.js';
import { relyingPartyOf, WebAuthnService } from '../mfa/webauthn.js';
import { AccountService } from '../users/account.js';
import type { UserDirectory } from '../users/directory.js';
import { KnownBrowsers } from '../users/known-browsers.js';
import { SessionService } from '../users/sessions.js';
import { UserService } from '../users/users.js';
import type { Infrastructure, ProtocolServices, SignInServices } from '../services.js';
import type { SigilOptions } from './options.js';

/**
 * Builds the sign-in group.
 * @param userAdmin the one writer of users: upstream sign-ins link their users, and /account
 *   writes passwords and profiles, through it
 * @throws Error when the dummy password cannot be hashed
 */
export async function buildSignIn(
  infra: Infrastructure,
  protocol: Pick<ProtocolServices, 'clients' | 'logout' | 'upstream' | 'interactions'>,
  userAdmin: UserAdmin,
  directories: readonly UserDirectory[],
  options: SigilOptions,
): Promise<SignInServices> {
  const { config: cfg, store, keys, limiter, events, log } = infra;
  const { clients, logout, upstream, interactions } = protocol;
  const profile = options.profileService;
  const users = await UserService.create(cfg.users, store.users, {
    directories,
    isActive: profile?.isActive?.bind(profile),
    emails: store.emails,
    log,
  });
  // WebAuthn credentials count as second factors while WebAuthn is on (FACTOR_KINDS).
  const mfa = new MfaService(
    store.factors,
    store.records,
    cfg.mfa,
    options.dataKey,
    cfg.webauthn.enabled ? store.webauthn : undefined,
  );
  const webauthn = new WebAuthnService(
    store,
    relyingPartyOf(cfg.issuer, cfg.webauthn.rpName),
    cfg.webauthn.challengeLifetime,
  );
  // Browsers refuse an IP address as RP ID (WebAuthn L3 §5.1.3).
  if (cfg.webauthn.enabled && isIP(webauthn.rp.id.replace(/^\[|\]$/g, '')) !== 0)
    log.warn(
      { rpId: webauthn.rp.id },
      'webauthn is enabled but the issuer host is an IP address: browsers will refuse passkeys; use a domain name such as localhost',
    );
  const signIn: SignInServices = {
    users,
    sessions: new SessionService(store.records.sessions, cfg.sessionLifetime, logout),
    knownBrowsers: new KnownBrowsers(keys, cfg.issuer, cfg.knownBrowserLifetime),
    federation: new UpstreamSignIn({
      upstream,
      states: store.records.federationStates,
      interactions,
      users: userAdmin,
      clients,
      log,
    }),
    mfa,
    secondStep: new SecondStepService(mfa, users, clients, limiter, events),
    enrollment: new FactorEnrollment(mfa, users, limiter, events),
    webauthn,
    passkeys: new PasskeyCeremonies(
      webauthn,
      store.webauthn,
      store.records.webauthnPending,
      mfa,
      users,
      limiter,
      events,
      cfg.webauthn,
    ),
    account: new AccountService(
      users,
      store.users,
      store.records,
      logout,
      clients,
      limiter,
      events,
      cfg.account.editableClaims,
      userAdmin,
    ),
  };
  return signIn;
}
