/**
 * The polling of grants a user answers out of band (the device flow, RFC 8628 §3.4–§3.5; CIBA
 * poll and ping modes, OpenID CIBA Core 1.0 §10–§11): `authorization_pending` until the user
 * answers, `slow_down` (and 5 s more interval) when polled faster than the interval,
 * `access_denied` after a denial, `expired_token` after the lifetime.
 *
 * A poll records its time with a compare-and-set on the data it read, never by writing back a
 * stale row: an answer stored between a poll's read and its write (on another node, say) makes the
 * write fail, and the poll judges the row again as it is now.
 */
import type { GrantRecord } from '../stores/grant-store.js';
import type { AuthorizationDetail, GrantSubject } from '../stores/records/grant-data.js';
import { OAuthError, invalidGrant } from '../protocol/errors.js';
import { nowSeconds } from '../crypto/handles.js';
import { redeemApproval } from './redeem.js';
import { bindingOf, type GrantHandler, type GrantServices } from './registry.js';

/** What a polled grant stores: the user's answer and the polling state. */
export interface PolledData {
  status: 'pending' | 'approved' | 'denied';
  /** Unix milliseconds of the last poll. */
  lastPollAt?: number;
  /** Current polling interval in seconds. */
  interval: number;
  /** The approving user, once approved. */
  subject?: GrantSubject;
}

/** The reads and the compare-and-set write of one kind of polled grant. */
export interface PolledRecords<D extends PolledData> {
  findByKey(key: string): Promise<GrantRecord<D> | undefined>;
  /** Replaces the data only while it is still `expected`; false when it changed first. */
  recordPoll(key: string, expected: D, next: D): Promise<boolean>;
}

/** What the user approved: the scopes and the authorization details (RFC 9396 §2), if any. */
export interface ApprovedRequest {
  scopes: string[];
  authorizationDetails?: AuthorizationDetail[];
}

/** Reads of a changing row before a poll gives up: whoever keeps changing it polls too fast. */
const MAX_ATTEMPTS = 4;

/** Longest handle looked up: ours are 43 characters; anything much longer is not one. */
const MAX_HANDLE_LENGTH = 512;

/**
 * Records one poll of the grant under `handle` and judges it.
 * @param what the handle's name in error descriptions (`device code`, `auth_req_id`)
 * @returns the approved row (its data holds the approving `subject`), not yet consumed
 * @throws OAuthError `invalid_grant` (unknown, another client's, revoked, already redeemed),
 *   `expired_token`, `slow_down`, `access_denied`, `authorization_pending`.
 */
export async function pollAnswer<D extends PolledData>(
  records: PolledRecords<D> & { keyOf(handle: string): string },
  handle: string,
  clientId: string,
  what: string,
): Promise<GrantRecord<D> & { data: D & { subject: GrantSubject } }> {
  const key = records.keyOf(handle);
  for (let attempt = 1; ; attempt++) {
    const row = handle.length <= MAX_HANDLE_LENGTH ? await records.findByKey(key) : undefined;
    if (!row || row.clientId !== clientId || row.revokedAt !== null) throw invalidGrant(`the ${what} is invalid`);
    if (row.consumedAt !== null) throw invalidGrant(`the ${what} was already redeemed`);
    if (row.expiresAt <= nowSeconds()) throw new OAuthError('expired_token', `the ${what} expired`);
    const data = row.data;
    const nowMs = Date.now();
    const tooFast = data.lastPollAt !== undefined && nowMs - data.lastPollAt < data.interval * 1000;
    const next: D = tooFast
      ? { ...data, lastPollAt: nowMs, interval: data.interval + 5 }
      : { ...data, lastPollAt: nowMs };
    if (!(await records.recordPoll(key, data, next))) {
      // Changed since the read: an answer, a redemption or another poll. Judge it again.
      if (attempt < MAX_ATTEMPTS) continue;
      throw new OAuthError('slow_down', 'poll less often');
    }
    if (tooFast) throw new OAuthError('slow_down', 'poll less often');
    if (data.status === 'denied') throw new OAuthError('access_denied', 'the user denied the request');
    const subject = data.subject;
    if (data.status === 'pending' || !subject)
      throw new OAuthError('authorization_pending', 'the user has not answered yet');
    return { ...row, data: { ...data, subject } };
  }
}

/** What tells one polled grant from another: its parameter, its records, its grant type. */
export interface PolledGrant<D extends PolledData & ApprovedRequest> {
  /** The token request's parameter naming the grant (`device_code`, `auth_req_id`). */
  param: string;
  /** Its name in error descriptions. */
  what: string;
  /** The `grant_type`, as the `preToken` hook is told it. */
  grantType: string;
  records: (
    ctx: GrantServices,
  ) => PolledRecords<D> & { keyOf(handle: string): string; consume(key: string, now: number): Promise<boolean> };
}

/**
 * The token endpoint's handler of a polled grant: `pollAnswer`, then tokens exactly once (the row
 * consumed atomically: of concurrent polls after the approval one gets them). The request named no
 * resource indicator, so the token request cannot narrow to one. The user answered on a page that
 * asks no hook, so the `preToken` hook is asked here. The tokens carry the approved authorization
 * details (RFC 9396 §7), if the request had any.
 * @throws OAuthError `invalid_request` (no handle), `invalid_target` (any `resource`), and what
 *   `pollAnswer` and `redeemApproval` throw.
 */
export function polledGrant<D extends PolledData & ApprovedRequest>(grant: PolledGrant<D>): GrantHandler {
  return async (ctx, req) => {
    const { params, client } = req;
    const handle = params.require(grant.param);
    if (params.has('resource'))
      throw new OAuthError(
        'invalid_target',
        `resource indicators are not supported with a ${grant.what}: its request named none`,
      );
    const records = grant.records(ctx);
    const row = await pollAnswer(records, handle, client.clientId, grant.what);
    const { subject, scopes, authorizationDetails } = row.data;
    return redeemApproval(
      ctx,
      client,
      { familyId: row.familyId, consume: (now: number) => records.consume(row.key, now) },
      { subject, scopes, ...(authorizationDetails ? { authorizationDetails } : {}) },
      async () => undefined,
      { ...bindingOf(req), preToken: grant.grantType },
    );
  };
}
