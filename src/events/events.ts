/**
 * Audit events: every security-relevant outcome is logged through pino and
 * handed to subscribers. Subscribers run after the response is decided; one that throws is logged
 * and does not affect the request.
 */
import type { Logger } from 'pino';

/** Event names, after Duende IdentityServer's catalogue of events. */
export type SigilEventName =
  | 'token_issued'
  | 'token_issue_failed'
  | 'client_authentication_failed'
  | 'user_login_succeeded'
  | 'user_login_failed'
  | 'token_revoked'
  | 'api_authentication_failed'
  /** A second factor was added (`factor` names its kind). */
  | 'mfa_enrolled'
  /** A second factor was removed by its user or an operator. */
  | 'mfa_removed'
  /** A second factor was verified. */
  | 'mfa_succeeded'
  /** A second factor's code was wrong, replayed or out of the window. */
  | 'mfa_failed'
  // WebAuthn: a credential registered or removed; an assertion accepted or refused.
  | 'webauthn_registered'
  | 'webauthn_removed'
  | 'webauthn_succeeded'
  | 'webauthn_failed'
  // Dynamic client registration (RFC 7591, RFC 7592): a client registered, its registration
  // replaced, the client deleted by itself or removed unused (endpoint `housekeeping`).
  | 'client_registered'
  | 'client_updated'
  | 'client_deleted'
  // Email: a password set through a reset link; an account created by self-registration.
  | 'password_reset'
  | 'user_registered'
  // Self-service on /account, after Duende's catalogue where it has one.
  /** A user changed their own password (`method`: `password` when the current one was given, else `recent_sign_in`). */
  | 'password_changed'
  /** A password change was refused: wrong current password, or a new one the policy refuses. */
  | 'password_change_failed'
  /** A user ended one of their sessions from /account/sessions (`sessionId` names it). */
  | 'session_ended'
  /** A user revoked a client's consent and tokens (Duende `GrantsRevokedEvent`; `clientId` names it). */
  | 'grants_revoked'
  /**
   * A user allowed a client the requested `scopes` on the consent page (Duende `ConsentGrantedEvent`);
   * `remembered` when the consent is kept for later requests.
   */
  | 'consent_granted'
  /**
   * A user denied a client the requested `scopes` (Duende `ConsentDeniedEvent`): a backchannel
   * authentication request (CIBA) answered "deny" on /account/requests.
   */
  | 'consent_denied'
  // CIBA (Duende `BackchannelAuthenticationSuccessEvent` / `...FailureEvent`): a request accepted
  // at `/connect/ciba` (`subjectId` the user it names, `scopes`), or refused (`error`).
  | 'backchannel_authentication_succeeded'
  | 'backchannel_authentication_failed'
  /** A user edited their profile claims (`claims` names them, never their values). */
  | 'profile_updated'
  // Management: a user or group created, changed or deleted through SCIM; `clientId`
  // and `subjectId` name the actor (the subject only when a user acts), `target` what changed.
  | 'resource_created'
  | 'resource_updated'
  | 'resource_deleted'
  /**
   * A change through the management API or console: `clientId`/`subjectId` name the actor, `action`,
   * `target`, `changes` what changed.
   */
  | 'admin_changed';

/** One audit event. Token values never appear in events. */
export interface SigilEvent {
  name: SigilEventName;
  /** ISO 8601 time of the event. */
  time: string;
  endpoint: string;
  clientId?: string;
  subjectId?: string;
  grantType?: string;
  scopes?: string[];
  /** The OAuth error code, for failures. */
  error?: string;
  errorDescription?: string;
  /** What was issued or revoked (`access_token`, `refresh_token`, `id_token`). */
  tokenTypes?: string[];
  /** The caller's address (after `trustProxy`), for events about a request. */
  remoteAddress?: string;
  /** The caller's `User-Agent`, at most 256 characters. */
  userAgent?: string;
  /** The request's id: one per HTTP request, unique across nodes (a random UUID). */
  requestId?: string;
  /** The factor an `mfa_*` or `webauthn_*` event is about (`totp`, `recovery_code`, `passkey`, `security-key`). */
  factor?: string;
  /**
   * How a `user_login_*` event's user signed in (its first step; a second factor is an `mfa_*` or
   * `webauthn_*` event); for `password_changed`, what proved the user (`password` or `recent_sign_in`).
   */
  method?: SignInMethod;
  /** The session an event is about (`sid`), for `session_ended`. */
  sessionId?: string;
  /** Whether a `consent_granted` event's consent is remembered for later requests. */
  remembered?: boolean;
  /** The claim names a `profile_updated` event changed (never their values: personal data). */
  claims?: string[];
  /**
   * What a `resource_*` (type `User`, `Group`) or `admin_changed` event (type `client`, `key`, `user`,
   * `session`) is about.
   */
  target?: { type: string; id: string };
  /** The attributes a `resource_*` event changed (names only, never values: no password or hash). */
  changed?: string[];
  /**
   * The organization (its name) whose SCIM endpoint made a `resource_*` change
   * (`/scim/v2/organizations/{name}`); absent for `/scim/v2`.
   */
  organization?: string;
  /** An `admin_changed` event's action (`client.create`, `client.update`, `key.rotate`, ...). */
  action?: string;
  /**
   * An `admin_changed` event's changed fields and their new values; secrets never appear (a rotated secret is
   * named, not given).
   */
  changes?: Record<string, unknown>;
  /** The OpenTelemetry trace the event happened in (32 hex digits), when tracing is on. */
  traceId?: string;
}

/**
 * The first step of a sign-in: a password on the login page, a passkey, an upstream provider
 * (federation), or the password grant (RFC 6749 §4.3).
 */
export type SignInMethod = 'password' | 'passkey' | 'upstream' | 'password_grant' | 'recent_sign_in';

/**
 * What an `EventBus` tells besides the log and the subscribers, synchronously and before the log
 * line, for every event: `count` sees each event (metrics; it must be cheap and must not throw),
 * `traceId` names the current trace, if any, for the log line.
 */
export interface EventObservers {
  count?: (event: Omit<SigilEvent, 'time'>) => void;
  traceId?: () => string | undefined;
}

/** Who made the request an event is about: spread into the event. */
export interface RequestOrigin {
  remoteAddress: string;
  userAgent: string | undefined;
  requestId: string;
}

/** A subscriber; may be async, its result is not awaited by the request. */
export type EventListener = (event: SigilEvent) => void | Promise<void>;

const FAILURES = new Set<SigilEventName>([
  'token_issue_failed',
  'client_authentication_failed',
  'user_login_failed',
  'api_authentication_failed',
  'mfa_failed',
  'webauthn_failed',
  'password_change_failed',
  'backchannel_authentication_failed',
]);

/** Publishes audit events to the log and to subscribers. */
export class EventBus {
  private readonly listeners = new Set<EventListener>();

  constructor(
    private readonly log: Logger,
    private readonly observers: EventObservers = {},
  ) {}

  /** Adds a subscriber; returns a function that removes it. */
  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Records an event. The object becomes the event: `time` is set on it here, and the log line and
   * every subscriber get that same object, so pass a new one each time (every caller passes a literal).
   */
  emit(event: Omit<SigilEvent, 'time'>): void {
    this.observers.count?.(event);
    const level = FAILURES.has(event.name) ? 'warn' : 'info';
    if (this.listeners.size === 0 && !this.log.isLevelEnabled(level)) return;
    // Set on the caller's object rather than copied into a new one: a copy was the costliest line of
    // a logged token request's event (its own CPU profile line, ahead of pino's serialisation).
    const full = event as SigilEvent;
    full.time = new Date().toISOString();
    const traceId = this.observers.traceId?.();
    if (traceId !== undefined) full.traceId = traceId;
    this.log[level]({ event: full }, full.name);
    for (const listener of this.listeners) {
      try {
        const result = listener(full);
        if (result && typeof (result as Promise<void>).catch === 'function')
          (result as Promise<void>).catch((err: unknown) => this.log.error({ err }, 'event subscriber failed'));
      } catch (err) {
        this.log.error({ err }, 'event subscriber failed');
      }
    }
  }
}
