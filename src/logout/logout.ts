/**
 * Ending sessions: which clients and SAML service providers took part in a session, and what ending it
 * sets off. The session row is revoked and the back-channel logout tokens for its clients are
 * queued in one store transaction (OIDC Back-Channel Logout 1.0 §2.5, durable), with the webhook
 * event `session.ended` of a live session; the front-channel
 * clients are returned for the signed-out page (OIDC Front-Channel Logout 1.0 §3), and the SAML
 * service providers for the LogoutRequests sent through the browser (SAML Profiles §4.4).
 */
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
  /** The SAML service providers that took part in it, for their LogoutRequests. */
  samlParticipants: SamlParticipation[];
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
   */
  constructor(
    private readonly store: LogoutStore,
    private readonly clients: ClientLookup,
    private readonly retrySeconds: number,
    private readonly deliverNow?: (ids: string[]) => Promise<void>,
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
   * a `backChannelLogoutUri`, in one transaction. A session already ended by someone else yields
   * no clients.
   * @param sendNow also try to send them before returning (bounded by the delivery timeout), as a
   *   logout does before its redirect (§2.5); otherwise the next poll sends them.
   */
  async endSession(sid: string, sendNow = true): Promise<EndedSession> {
    const ended = await this.end(sid, nowSeconds());
    if (sendNow && this.deliverNow) await this.deliverNow(ended.deliveryIds);
    return ended;
  }

  /**
   * Ends every live session of a user (`sigil users sessions revoke`), or every one but `keepSid`
   * (a password change on /account keeps the browser's own); returns how many.
   * @param sendNow as for `endSession`
   */
  async endSessionsOf(subjectId: string, keepSid?: string, sendNow = true): Promise<number> {
    const sids = (await this.store.liveSessions(subjectId, nowSeconds())).filter((sid) => sid !== keepSid);
    for (const sid of sids) await this.endSession(sid, sendNow);
    return sids.length;
  }

  /** Ends sessions found past their end that have participants (their deliveries are sent by the next poll). */
  async endExpired(): Promise<void> {
    const now = nowSeconds();
    for (const sid of await this.store.expiredSessions(now, SWEEP_BATCH)) await this.end(sid, now);
  }

  private async end(sid: string, now: number): Promise<EndedSession> {
    let deliveries: LogoutDelivery[] = [];
    const participants = await this.store.endSession(
      sid,
      now,
      (found) => {
        deliveries = this.plan(found, now);
        return deliveries;
      },
      // Webhooks hear of it in the same transaction (`session.ended`).
      (subject) => [{ type: 'session.ended', orderKey: userOrderKey(subject), data: { subject, sessionId: sid } }],
    );
    const clients = participants
      .map((p) => this.clients.get(p.clientId))
      .filter((c): c is ClientConfig => c !== undefined);
    const samlParticipants = participants.flatMap((p) => (p.saml ? [p.saml] : []));
    return { sid, clients, deliveryIds: deliveries.map((d) => d.id), samlParticipants };
  }

  private plan(participants: SessionParticipant[], now: number): LogoutDelivery[] {
    const out: LogoutDelivery[] = [];
    for (const p of participants) {
      const uri = this.clients.get(p.clientId)?.backChannelLogoutUri;
      if (uri)
        out.push({
          id: newId(),
          clientId: p.clientId,
          uri,
          subjectId: p.subjectId,
          sid: p.sid,
          attempts: 0,
          giveUpAt: now + this.retrySeconds,
        });
    }
    return out;
  }
}
