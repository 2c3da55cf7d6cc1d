/**
 * The SQL implementation of `LogoutStore` (sessions' participants and the back-channel logout
 * outbox), on the same Kysely instance as the rest of the store, both dialects.
 */
import type { Kysely } from 'kysely';
import type { WebhookEvent } from '../events/webhook-events.js';
import type { LogoutDelivery, LogoutStore, SamlParticipation, SessionParticipant } from './types.js';
import type { Database } from './tables.js';
import type { SqlWebhookOutbox } from './webhook-outbox.js';

/** `LogoutStore` over a Kysely instance whose schema has the `0006_logout` migration. */
export class SqlLogoutStore implements LogoutStore {
  /** @param outbox where a session's end puts its webhook events (`session.ended`), in its transaction */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly webhooks?: SqlWebhookOutbox,
  ) {}

  async addParticipant(p: SessionParticipant, expiresAt: number): Promise<void> {
    const saml = p.saml ? JSON.stringify(p.saml) : null;
    await this.db
      .insertInto('session_participants')
      .values({ sid: p.sid, client_id: p.clientId, subject_id: p.subjectId, expires_at: expiresAt, saml })
      .onConflict((oc) =>
        saml === null
          ? oc.columns(['sid', 'client_id']).doNothing()
          : oc.columns(['sid', 'client_id']).doUpdateSet({ saml }),
      )
      .execute();
  }

  async participant(sid: string, clientId: string): Promise<SessionParticipant | undefined> {
    const row = await this.db
      .selectFrom('session_participants')
      .select(['sid', 'client_id', 'subject_id', 'saml'])
      .where('sid', '=', sid)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row && participantOf(row);
  }

  async forgetClient(clientId: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const participants = await trx
        .deleteFrom('session_participants')
        .where('client_id', '=', clientId)
        .executeTakeFirst();
      const deliveries = await trx.deleteFrom('logout_deliveries').where('client_id', '=', clientId).executeTakeFirst();
      return Number(participants.numDeletedRows) + Number(deliveries.numDeletedRows);
    });
  }

  async endSession(
    sid: string,
    now: number,
    plan: (participants: SessionParticipant[]) => LogoutDelivery[],
    ended?: (subjectId: string) => WebhookEvent[],
  ): Promise<SessionParticipant[]> {
    return this.db.transaction().execute(async (trx) => {
      const revoked = await trx
        .updateTable('grants')
        .set({ revoked_at: now })
        .where('family_id', '=', sid)
        .where('type', '=', 'session')
        .where('revoked_at', 'is', null)
        .returning(['subject_id', 'expires_at'])
        .execute();
      // A live session ended here (not one found expired by the sweep): its webhook event.
      const live = revoked.find((r) => r.subject_id !== null && Number(r.expires_at) > now);
      if (live?.subject_id && ended) await this.webhooks?.append(trx, ended(live.subject_id), now);
      // The delete is the claim: of concurrent callers, one gets the rows.
      const rows = await trx
        .deleteFrom('session_participants')
        .where('sid', '=', sid)
        .returning(['sid', 'client_id', 'subject_id', 'saml'])
        .execute();
      const participants = rows.map(participantOf);
      const deliveries = plan(participants);
      if (deliveries.length > 0)
        await trx
          .insertInto('logout_deliveries')
          .values(
            deliveries.map((d) => ({
              id: d.id,
              client_id: d.clientId,
              uri: d.uri,
              subject_id: d.subjectId,
              sid: d.sid,
              attempts: d.attempts,
              created_at: now,
              next_attempt_at: now,
              give_up_at: d.giveUpAt,
              lease_holder: null,
              lease_until: 0,
              last_error: null,
              saml: d.saml ? JSON.stringify(d.saml) : null,
            })),
          )
          .execute();
      return participants;
    });
  }

  async liveSessions(subjectId: string, now: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('grants')
      .select('family_id')
      .where('subject_id', '=', subjectId)
      .where('type', '=', 'session')
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .execute();
    return rows.map((r) => r.family_id);
  }

  async expiredSessions(now: number, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('session_participants')
      .select('sid')
      .distinct()
      .where('expires_at', '<=', now)
      .limit(limit)
      .execute();
    return rows.map((r) => r.sid);
  }

  async claimDeliveries(
    holder: string,
    now: number,
    leaseUntil: number,
    limit: number,
    ids?: string[],
  ): Promise<LogoutDelivery[]> {
    let due = this.db
      .selectFrom('logout_deliveries')
      .selectAll()
      .where('next_attempt_at', '<=', now)
      .where('lease_until', '<=', now);
    if (ids) {
      if (ids.length === 0) return [];
      due = due.where('id', 'in', ids);
    }
    const candidates = await due.orderBy('next_attempt_at').limit(limit).execute();
    const claimed: LogoutDelivery[] = [];
    for (const row of candidates) {
      const result = await this.db
        .updateTable('logout_deliveries')
        .set({ lease_holder: holder, lease_until: leaseUntil })
        .where('id', '=', row.id)
        .where('lease_until', '<=', now)
        .executeTakeFirst();
      if (result.numUpdatedRows !== 1n) continue;
      claimed.push({
        id: row.id,
        clientId: row.client_id,
        uri: row.uri,
        subjectId: row.subject_id,
        sid: row.sid,
        attempts: Number(row.attempts),
        giveUpAt: Number(row.give_up_at),
        ...(row.saml !== null ? { saml: JSON.parse(row.saml) as SamlParticipation } : {}),
      });
    }
    return claimed;
  }

  async outbox(): Promise<{ depth: number; oldestCreatedAt: number | null }> {
    const row = await this.db
      .selectFrom('logout_deliveries')
      .select((eb) => [eb.fn.countAll<number | string | bigint>().as('depth'), eb.fn.min('created_at').as('oldest')])
      .executeTakeFirstOrThrow();
    return { depth: Number(row.depth), oldestCreatedAt: row.oldest === null ? null : Number(row.oldest) };
  }

  async finishDelivery(id: string, holder: string): Promise<void> {
    await this.db.deleteFrom('logout_deliveries').where('id', '=', id).where('lease_holder', '=', holder).execute();
  }

  async retryDelivery(id: string, holder: string, nextAttemptAt: number, lastError: string): Promise<void> {
    await this.db
      .updateTable('logout_deliveries')
      .set((eb) => ({
        attempts: eb('attempts', '+', 1),
        next_attempt_at: nextAttemptAt,
        lease_until: 0,
        last_error: lastError.slice(0, 500),
      }))
      .where('id', '=', id)
      .where('lease_holder', '=', holder)
      .execute();
  }
}

/** A participant row as the store hands it out. */
function participantOf(row: {
  sid: string;
  client_id: string;
  subject_id: string;
  saml: string | null;
}): SessionParticipant {
  return {
    sid: row.sid,
    clientId: row.client_id,
    subjectId: row.subject_id,
    ...(row.saml !== null ? { saml: JSON.parse(row.saml) as SamlParticipation } : {}),
  };
}
