/**
 * Back-channel logout delivery (OIDC Back-Channel Logout 1.0 §2.5) from the durable outbox
 * (`LogoutStore`): each node polls for due deliveries, claims each with a lease (so one node of a
 * cluster sends it), POSTs `logout_token` with a timeout and without following redirects, and on
 * failure retries with doubling back-off until the delivery's give-up time. A node killed mid-send
 * leaves a lease that runs out; another node (or the same after restart) then sends it again.
 * The URI of a client whose URLs a caller chose (dynamic registration) is posted to under the
 * SSRF guard (`http/outbound.ts`): a registrant cannot make Sigil post into its own network.
 * A delivery for a SAML SP (`LogoutDelivery.saml`) is the same outbox entry, claimed, retried and
 * given up alike; its LogoutRequest goes over SOAP through the `SamlLogoutSender` (the SAML
 * identity provider's, which sits above this layer).
 */
import type { Logger } from 'pino';
import type { KeyRing } from '../keys/keys.js';
import { newId, nowSeconds } from '../crypto/handles.js';
import { postToClientUrl } from '../http/outbound.js';
import type { LogoutDelivery, LogoutStore, SamlParticipation } from '../stores/types.js';
import { signLogoutToken } from './logout-token.js';
import { type Polling, startPolling } from '../events/polling.js';

/** Delivery settings, in seconds (config `backChannelLogout`). */
export interface DeliveryOptions {
  timeoutSeconds: number;
  pollSeconds: number;
}

/** Which deliveries go under the SSRF guard. */
export interface DeliveryGuard {
  /**
   * Whether the client's logout URI was chosen by a caller (`hasCallerChosenUrls`); true for a client no
   * longer known.
   */
  callerChosen: (clientId: string) => boolean;
  /** Loopback addresses are allowed (development; `clientIdMetadataDocuments.allowLoopback`). */
  allowLoopback: boolean;
}

/** A failed attempt: why, and whether retrying cannot help. */
export interface DeliveryFailure {
  message: string;
  final: boolean;
}

/**
 * Sends a SAML SP its LogoutRequest over SOAP for a delivery with `saml` (SAML Bindings §3.2),
 * under the SSRF guard with `limits`; never throws.
 * @returns the LogoutResponse's top-level status on Success, or the failure
 */
export type SamlLogoutSender = (
  delivery: LogoutDelivery & { saml: SamlParticipation },
  limits: { timeoutMs: number; allowLoopback: boolean },
) => Promise<{ status: string } | DeliveryFailure>;

/** Seconds before the first retry; doubled after each failure, at most `MAX_BACKOFF`. */
const FIRST_BACKOFF = 1;
const MAX_BACKOFF = 60;
/** Deliveries claimed per batch. */
const BATCH = 20;

/** The seconds to wait before attempt `attempts + 1` (attempts already made ≥ 1). */
export function backoffSeconds(attempts: number): number {
  return Math.min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** Math.max(0, attempts - 1));
}

/** Sends queued logout tokens; one per node. */
export class LogoutDeliverer {
  private readonly holder = newId();
  private polling: Polling | undefined;

  /**
   * @param guard which clients' URIs are posted to under the SSRF guard
   * @param sweep called at each poll before sending: ends sessions found expired (queueing their
   *   deliveries).
   * @param saml sends the SAML SPs' LogoutRequests; absent, such deliveries fail and are retried
   */
  constructor(
    private readonly store: LogoutStore,
    private readonly keys: KeyRing,
    private readonly issuer: string,
    private readonly log: Logger,
    private readonly options: DeliveryOptions,
    private readonly guard: DeliveryGuard,
    private readonly sweep: () => Promise<void> = async () => {},
    private readonly saml?: SamlLogoutSender,
  ) {}

  /** Starts polling every `pollSeconds` (`startPolling`: one poll at a time, the process not kept alive). */
  start(): void {
    this.polling = startPolling(
      () => this.poll(),
      this.options.pollSeconds,
      (err) => this.log.error({ err }, 'back-channel logout delivery failed'),
    );
  }

  /** Stops polling and waits for a poll under way. */
  async stop(): Promise<void> {
    await this.polling?.stop();
  }

  /** One poll: sweep expired sessions, then send what is due. */
  private async poll(): Promise<void> {
    await this.sweep();
    for (;;) {
      const sent = await this.sendDue();
      if (sent < BATCH) break;
    }
  }

  /**
   * Tries the given deliveries now (those this node can claim), waiting at most for their
   * requests' timeout: an RP-initiated logout sends its tokens before it redirects (§2.5).
   * Failures stay queued for retries.
   */
  async deliverNow(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const now = nowSeconds();
    const claimed = await this.store.claimDeliveries(this.holder, now, now + this.leaseSeconds(), ids.length, ids);
    await Promise.all(claimed.map((d) => this.attempt(d)));
  }

  /** Claims and sends one batch of due deliveries; returns how many were claimed. */
  private async sendDue(): Promise<number> {
    const now = nowSeconds();
    const claimed = await this.store.claimDeliveries(this.holder, now, now + this.leaseSeconds(), BATCH);
    await Promise.all(claimed.map((d) => this.attempt(d)));
    return claimed.length;
  }

  /**
   * A lease outlives the request (timeout) with margin for signing and the store; a node that
   * dies mid-send holds it no longer than this.
   */
  private leaseSeconds(): number {
    return 2 * this.options.timeoutSeconds + 5;
  }

  /** One attempt of a claimed delivery; records the outcome. Never throws for a client's failure. */
  private async attempt(delivery: LogoutDelivery): Promise<void> {
    const now = nowSeconds();
    const outcome = await this.send(delivery, now);
    // A SAML SP is named by its entity ID (its client id is a digest of it).
    const who = {
      clientId: delivery.clientId,
      ...(delivery.saml ? { entityId: delivery.saml.entityId } : {}),
      sid: delivery.sid,
      attempts: delivery.attempts + 1,
    };
    if (!('message' in outcome)) {
      await this.store.finishDelivery(delivery.id, this.holder);
      this.log.info({ ...who, ...outcome }, 'back-channel logout delivered');
      return;
    }
    const next = now + backoffSeconds(delivery.attempts + 1);
    if (outcome.final || next > delivery.giveUpAt) {
      await this.store.finishDelivery(delivery.id, this.holder);
      this.log.warn({ ...who, error: outcome.message }, 'back-channel logout given up');
      return;
    }
    await this.store.retryDelivery(delivery.id, this.holder, next, outcome.message);
    this.log.warn({ ...who, retryAt: next, error: outcome.message }, 'back-channel logout failed; will retry');
  }

  /** One attempt: a logout token, or a SAML SP's LogoutRequest; never throws. */
  private async send(delivery: LogoutDelivery, now: number): Promise<{ status?: string } | DeliveryFailure> {
    const { saml } = delivery;
    if (!saml) return (await this.post(delivery, now)) ?? {};
    if (!this.saml) return { message: 'SAML single logout is not available on this node', final: false };
    try {
      return await this.saml(
        { ...delivery, saml },
        { timeoutMs: this.options.timeoutSeconds * 1000, allowLoopback: this.guard.allowLoopback },
      );
    } catch (err) {
      return { message: err instanceof Error ? err.message : String(err), final: false };
    }
  }

  /**
   * POSTs the logout token (§2.5): form-encoded, no redirects followed, `timeoutSeconds`.
   * @returns undefined on 200/204, else the error; `final` when retrying cannot help (a 4xx other
   *   than 408 and 429: the client refused the token).
   */
  private async post(delivery: LogoutDelivery, now: number): Promise<DeliveryFailure | undefined> {
    try {
      const token = signLogoutToken(this.keys, this.issuer, delivery, now);
      const form = new URLSearchParams({ logout_token: token }).toString();
      const status = await this.postForm(delivery, form);
      if (status === 200 || status === 204) return undefined;
      const final = status >= 400 && status < 500 && status !== 408 && status !== 429;
      return { message: `HTTP ${status}`, final };
    } catch (err) {
      return { message: err instanceof Error ? err.message : String(err), final: false };
    }
  }

  /** POSTs the form to the delivery's URI, under the SSRF guard for a caller-chosen URI; the answer's status. */
  private async postForm(delivery: LogoutDelivery, form: string): Promise<number> {
    return postToClientUrl(
      delivery.uri,
      form,
      { 'content-type': 'application/x-www-form-urlencoded' },
      {
        callerChosen: this.guard.callerChosen(delivery.clientId),
        allowLoopback: this.guard.allowLoopback,
        timeoutMs: this.options.timeoutSeconds * 1000,
      },
    );
  }
}
