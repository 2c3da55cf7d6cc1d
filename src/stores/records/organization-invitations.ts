/**
 * Invitations to join an organization, sent by mail (`POST /admin/v1/organizations/{name}/invitations`).
 * The token travels only in the message; the store keeps its SHA-256 (`hashHandle`), so a read of
 * the store yields no usable link. Each is single-use: `consume` is one conditional update, and
 * only a live invitation (not consumed, revoked or expired) is taken.
 *
 * An invitation is stored under its organization (`ownerOf`, in the subject column, which no user's
 * subject can take: user subjects have no such prefix and the type is kept apart), so the pending
 * ones of one organization are listed along the `grants_subject` index.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** Stored data of an invitation. */
export interface InvitationData {
  /** The id the management API shows and revokes by (random, never the token). */
  id: string;
  /** The organization's stable id, and its name when invited. */
  organizationId: string;
  organization: string;
  /** The address the link was sent to. */
  email: string;
  /** The roles the member gets when accepting. */
  roles: string[];
  [key: string]: unknown;
}

/** The `org_invitation` records, by token. Times are Unix seconds. */
export class OrganizationInvitationRecords {
  private readonly kind: RecordKind<InvitationData>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'org_invitation');
  }

  /** Stores a new invitation under the hash of `token`, living `lifetimeSeconds`. */
  issue(token: string, data: InvitationData, now: number, lifetimeSeconds: number): Promise<void> {
    return this.kind.put({
      key: hashHandle(token),
      clientId: '',
      subjectId: ownerOf(data.organizationId),
      data,
      createdAt: now,
      expiresAt: now + lifetimeSeconds,
    });
  }

  /** The pending (live) invitations of an organization, newest first, at most `limit`. */
  pending(organizationId: string, now: number, limit: number): Promise<GrantRecord<InvitationData>[]> {
    return this.kind.liveOf(ownerOf(organizationId), now, limit);
  }

  /** The invitation of `token` when live at `now`, or undefined. */
  findLive(token: string, now: number): Promise<GrantRecord<InvitationData> | undefined> {
    return this.kind.findLive(hashHandle(token), now);
  }

  /** Uses the invitation, atomically: of concurrent uses exactly one gets true, and only while it is live. */
  consume(token: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(token), now);
  }

  /** Revokes a stored invitation (as `pending` listed it): its link no longer works. */
  revoke(record: GrantRecord<InvitationData>, now: number): Promise<void> {
    const { key, clientId, subjectId, data, createdAt, expiresAt } = record;
    return this.kind.revoke({ key, clientId, subjectId, data, createdAt, expiresAt }, now);
  }
}

/** The subject column's value of an organization's invitations. */
function ownerOf(organizationId: string): string {
  return `organization:${organizationId}`;
}
