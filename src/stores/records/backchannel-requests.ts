/**
 * Pending CIBA requests (OpenID CIBA Core 1.0 §7.3, §10.1): each stored under the SHA-256 of its
 * `auth_req_id`, with its user as the row's subject so that the user's pending requests are read
 * along the `grants_subject` index (the approval page). The user's answer and each poll are
 * compare-and-set writes on the data as read (`replaceData`); redemption consumes the row
 * atomically, once.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import type { AuthorizationDetail, GrantSubject } from './grant-data.js';
import { RecordKind } from './record-kind.js';

/** Stored state of a CIBA request. */
export interface BackchannelRequestData {
  /** The scopes asked for, narrowed to the client's (`openid` among them). */
  scopes: string[];
  status: 'pending' | 'approved' | 'denied';
  /** Unix milliseconds of the last poll at the token endpoint. */
  lastPollAt?: number;
  /** Current polling interval in seconds (grows by 5 on each `slow_down`, as the device flow's). */
  interval: number;
  /** The `binding_message` shown to the user beside the client's name (CIBA §7.1). */
  bindingMessage?: string;
  /** The `acr_values` sent, as sent (CIBA §7.1). */
  acrValues?: string;
  /** The `authorization_details` asked for (RFC 9396 §2), checked: the approval grants them. */
  authorizationDetails?: AuthorizationDetail[];
  /** Ping mode: the `client_notification_token` the callback carries as Bearer (CIBA §10.2). */
  notificationToken?: string;
  /**
   * Ping mode: the `auth_req_id` itself, which the callback carries (CIBA §10.2); it redeems
   * nothing without the client's credentials.
   */
  authReqId?: string;
  /** How the user signed in when they approved (their session), once approved. */
  subject?: GrantSubject;
  [key: string]: unknown;
}

/** The `backchannel_request` records. Times are Unix seconds. */
export class BackchannelRequests {
  private readonly requests: RecordKind<BackchannelRequestData>;

  constructor(grants: GrantStore) {
    this.requests = new RecordKind(grants, 'backchannel_request');
  }

  /** Store key of an `auth_req_id`; the approval page names a request by it (never by the id itself). */
  keyOf(authReqId: string): string {
    return hashHandle(authReqId);
  }

  /** Stores a new request (status `pending`) of `subjectId` until `expiresAt`. */
  put(
    authReqId: string,
    record: { clientId: string; subjectId: string; data: BackchannelRequestData; createdAt: number; expiresAt: number },
  ): Promise<void> {
    return this.requests.put({ key: this.keyOf(authReqId), ...record });
  }

  /** The request's record by its key, whatever its state, or undefined. */
  findByKey(key: string): Promise<GrantRecord<BackchannelRequestData> | undefined> {
    return this.requests.find(key);
  }

  /**
   * The user's requests still waiting for an answer at `now`, newest first, at most `limit`.
   */
  async pendingOf(subjectId: string, now: number, limit: number): Promise<GrantRecord<BackchannelRequestData>[]> {
    return (await this.requests.liveOf(subjectId, now, limit)).filter((r) => r.data.status === 'pending');
  }

  /**
   * Records a poll (its time, a grown interval) by compare-and-set on the data `expected` as read:
   * false when an answer, a redemption or another poll changed it first.
   */
  recordPoll(key: string, expected: BackchannelRequestData, next: BackchannelRequestData): Promise<boolean> {
    return this.requests.replaceData(key, expected, next);
  }

  /**
   * Records the user's answer by compare-and-set on the data `expected` as read (status
   * `pending`): false when a poll or another answer changed it first, or the request is gone.
   */
  answer(key: string, expected: BackchannelRequestData, answered: BackchannelRequestData): Promise<boolean> {
    return this.requests.replaceData(key, expected, answered);
  }

  /** Redeems the request, atomically: of concurrent polls exactly one gets true. */
  consume(key: string, now: number): Promise<boolean> {
    return this.requests.consume(key, now);
  }
}
