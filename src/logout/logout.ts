/**
 * Ending sessions: which clients and SAML service providers took part in a session, and what ending it
 * sets off. The session row is revoked and the back-channel logout tokens for its clients are
 * queued in one store transaction (OIDC Back-Channel Logout 1.0 §2.5, durable), with the webhook
 * event `session.ended` of a live session; the front-channel
 * clients are returned for the signed-out page (OIDC Front-Channel Logout 1.0 §3), and the SAML
 * service providers for the LogoutRequests sent through the browser (SAML Profiles §4.4). A session
 * ended without its browser (by an administrator, from another session, by expiry, a user deleted
 * or deactivated) queues a LogoutRequest over SOAP (SAML Bindings §3.2) for each of its SPs that
 * has a SOAP single logout endpoint, in the same transaction as the logout tokens; so does one
 * ended in the browser for an SP that takes no LogoutRequest through it.
 */
import type { Logger } from 'pino';
import type { ClientConfig } from '../config/schema.js';
import { hashHandle, newId, nowSeconds } from '../crypto/handles.js';
import { userOrderKey } from '../events/webhook-events.js';
import type { LogoutDelivery, LogoutStore, SamlParticipation, SessionParticipant } from '../stores/types.js';

/** Looks up a client by id (the registry: config-file and stored clients). */
export interface ClientLookup {
  get(clientId: string): ClientConfig | undefined;
}

/** What ending one session did. */
export interface EndedSession {
  sid: string;
  /** The clients that took part in it (still registered), for front-channel logout. */
  clients: ClientConfig[];
  /** The ids of the back-channel deliveries queued. */
  deliveryIds: string[];
  /**
   * The SAML service providers that took part in it and are left for LogoutRequests through the
   * browser (none when it was ended without one: those with a SOAP endpoint are queued).
   */
  samlParticipants: SamlParticipation[];
}

/** How a session's SAML SPs are told of its end: the SPs in force (config-file and stored). */
export interface SamlLogoutEndpoints {
  /** The SP's SOAP SingleLogoutService, or undefined (unknown SP, or none in its metadata). */
  soapUrl(entityId: string): string | undefined;
  /** Whether the SP takes LogoutRequests through the browser (a front-channel SingleLogoutService). */
  frontChannel(entityId: string): boolean;
}

/** How a session is ended. */
export interface EndOptions {
  /**
   * Also try to send the back-channel deliveries before returning (bounded by the delivery
   * timeout), as a logout does before its redirect (§2.5); otherwise the next poll sends them.
   * Default true.
   */
  sendNow?: boolean;
  /**
   * The session's browser is at hand and will carry LogoutRequests to its SAML SPs (SAML Profiles
   * §4.4.3.3); only SPs without a front-channel endpoint are then sent one over SOAP. Default false.
   */
  browser?: boolean;
}

/**
 * The participant id of a SAML SP (`SessionParticipant.clientId`): `saml:` and the SHA-256 of its
 * entity ID, which may be 1024 characters long; never the id of a client.
 */
export function samlParticipantId(entityId: string): string {
  return `saml:${hashHandle(entityId)}`;
}

/** Expired sessions ended per sweep. */
const SWEEP_BATCH = 100;

/** Records participants and ends sessions with their notifications. */
export class LogoutService {
  /**
   * @param retrySeconds how long a back-channel delivery is retried (config `backChannelLogout.retrySeconds`)
   * @param deliverNow tries queued deliveries at once (the node's deliverer); absent on the command line,
   *   where running nodes send them.
   * @param saml the SAML SPs' logout endpoints; absent, SAML SPs are not told
   * @param log where an SP that cannot be told without the browser is reported
   */
  constructor(
    private readonly store: LogoutStore,
    private readonly clients: ClientLookup,
    private readonly retrySeconds: number,
    private readonly deliverNow?: (ids: string[]) => Promise<void>,
    private readonly saml?: SamlLogoutEndpoints,
    private readonly log?: Logger,
  ) {}

  /**
   * Records that `client` received a code or tokens for `session`, when it has a back- or
   * front-channel logout URI (others are never notified, so they are not recorded).
   * @param expiresAt the session's end, Unix seconds
   */
  async participate(
    session: { sid: string; subjectId: string },
    expiresAt: number,
    client: ClientConfig,
  ): Promise<void> {
    if (!client.backChannelLogoutUri && !client.frontChannelLogoutUri) return;
    await this.store.addParticipant(
      { sid: session.sid, clientId: client.clientId, subjectId: session.subjectId },
      expiresAt,
    );
  }

  /**
   * Records that a SAML SP received an assertion for `session`, with the NameID and SessionIndex its
   * LogoutRequest repeats (SAML Core §3.7.1); the latest assertion's replace an earlier one's.
   * @param expiresAt the session's end, Unix seconds
   */
  async participateSaml(
    session: { sid: string; subjectId: string },
    expiresAt: number,
    saml: SamlParticipation,
  ): Promise<void> {
    await this.store.addParticipant(
      { sid: session.sid, clientId: samlParticipantId(saml.entityId), subjectId: session.subjectId, saml },
      expiresAt,
    );
  }

  /** What SAML SP `entityId` was told about session `sid`, while the session has not been ended. */
  async samlParticipant(sid: string, entityId: string): Promise<SamlParticipation | undefined> {
    return (await this.store.participant(sid, samlParticipantId(entityId)))?.saml;
  }

  /**
   * Ends session `sid`: revokes it and queues a logout token for each participating client with
   * a `backChannelLogoutUri`, and a SOAP LogoutRequest for each SAML SP the browser does not carry
   * one to (`EndOptions.browser`), in one transaction. A session already ended by someone else
   * yields no clients.
   */
  async endSession(sid: string, options: EndOptions = {}): Promise<EndedSession> {
    const ended = await this.end(sid, nowSeconds(), options.browser ?? false);
    if ((options.sendNow ?? true) && this.deliverNow) await this.deliverNow(ended.deliveryIds);
    return ended;
  }

  /**
   * Ends every live session of a user (`sigil users sessions revoke`), or every one but `keepSid`
   * (a password change on /account keeps the browser's own), none with its browser; returns how many.
   * @param sendNow as `EndOptions.sendNow`
   */
  async endSessionsOf(subjectId: string, keepSid?: string, sendNow = true): Promise<number> {
    const sids = (await this.store.liveSessions(subjectId, nowSeconds())).filter((sid) => sid !== keepSid);
    for (const sid of sids) await this.endSession(sid, { sendNow });
    return sids.length;
  }

  /** Ends sessions found past their end that have participants (their deliveries are sent by the next poll). */
  async endExpired(): Promise<void> {
    const now = nowSeconds();
    for (const sid of await this.store.expiredSessions(now, SWEEP_BATCH)) await this.end(sid, now, false);
  }

  private async end(sid: string, now: number, browser: boolean): Promise<EndedSession> {
    let deliveries: LogoutDelivery[] = [];
    const participants = await this.store.endSession(
      sid,
      now,
      (found) => {
        deliveries = [...this.plan(found, now), ...this.planSaml(found, now, browser)];
        return deliveries;
      },
      // Webhooks hear of it in the same transaction (`session.ended`).
      (subject) => [{ type: 'session.ended', orderKey: userOrderKey(subject), data: { subject, sessionId: sid } }],
    );
    const clients = participants
      .map((p) => this.clients.get(p.clientId))
      .filter((c): c is ClientConfig => c !== undefined);
    const soap = new Set(deliveries.flatMap((d) => (d.saml ? [d.saml.entityId] : [])));
    const samlParticipants = browser
      ? participants.flatMap((p) => (p.saml && !soap.has(p.saml.entityId) ? [p.saml] : []))
      : [];
    for (const p of participants)
      if (p.saml && !soap.has(p.saml.entityId) && !(browser && this.saml?.frontChannel(p.saml.entityId)))
        this.log?.warn(
          { entityId: p.saml.entityId, sid },
          'SAML service provider not told of the logout: it has no SOAP SingleLogoutService',
        );
    return { sid, clients, deliveryIds: deliveries.map((d) => d.id), samlParticipants };
  }

  /**
   * The SOAP LogoutRequests of a session's SAML SPs (SAML Profiles §4.4.3.3): to each with a SOAP
   * endpoint, unless the browser carries one to it.
   */
  private planSaml(participants: SessionParticipant[], now: number, browser: boolean): LogoutDelivery[] {
    const out: LogoutDelivery[] = [];
    for (const p of participants) {
      if (!p.saml || (browser && this.saml?.frontChannel(p.saml.entityId))) continue;
      const uri = this.saml?.soapUrl(p.saml.entityId);
      if (uri) out.push({ ...this.delivery(p, uri, now), saml: p.saml });
    }
    return out;
  }

  private plan(participants: SessionParticipant[], now: number): LogoutDelivery[] {
    const out: LogoutDelivery[] = [];
    for (const p of participants) {
      const uri = this.clients.get(p.clientId)?.backChannelLogoutUri;
      if (uri) out.push(this.delivery(p, uri, now));
    }
    return out;
  }

  /** A new delivery to `uri` for a participant, not yet tried, given up after `retrySeconds`. */
  private delivery(p: SessionParticipant, uri: string, now: number): LogoutDelivery {
    return {
      id: newId(),
      clientId: p.clientId,
      uri,
      subjectId: p.subjectId,
      sid: p.sid,
      attempts: 0,
      giveUpAt: now + this.retrySeconds,
    };
  }
}
