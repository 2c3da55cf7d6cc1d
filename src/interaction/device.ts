/**
 * A device's pending request (RFC 8628 §3.3) as the verification page (`/device`) meets it: the
 * device authorization found by the user code the person typed, the pending request started for
 * it in this browser, the page it goes to next, and the answer: the person approves or denies;
 * the device learns which by polling the token endpoint (grants/device-code.ts).
 */
import type { Services } from '../services.js';
import { nowSeconds } from '../crypto/handles.js';
import { type DeviceCodeData, userCodeKey } from '../stores/records/device-codes.js';
import type { Interaction } from '../stores/records/interactions.js';
import type { Session } from '../users/sessions.js';
import { formatUserCode, normalizeUserCode } from '../validation/user-code.js';
import { stepUpPage } from './facts.js';
import { type Pending, takeInteractionQuota } from './interactions.js';

/** A device authorization waiting for its user's answer, found by its user code. */
export interface PendingDevice {
  /** Key of the device code's row. */
  deviceKey: string;
  /** Key of the user code's row. */
  userCodeKey: string;
  clientId: string;
  /** The scopes the device asked for. */
  scopes: string[];
}

/**
 * What a person typed (or a `verification_uri_complete` carried) in the display form `XXXX-XXXX`
 * (validation/user-code.ts), or '' when it cannot be a user code.
 */
export function shownUserCode(typed: string): string {
  const code = normalizeUserCode(typed);
  return code ? formatUserCode(code) : '';
}

/**
 * The device authorization of a typed user code (case, dashes and spaces ignored), when both the
 * user code and its device code are live and still waiting for an answer.
 * @returns undefined for anything else: not a user code, unknown, expired, used or answered.
 */
export async function findPendingDevice(ctx: DeviceServices, typed: string): Promise<PendingDevice | undefined> {
  const code = normalizeUserCode(typed);
  if (!code) return undefined;
  const now = nowSeconds();
  const key = userCodeKey(code);
  const codeRow = await ctx.store.records.deviceCodes.findLiveUserCode(key, now);
  if (!codeRow) return undefined;
  const deviceKey = codeRow.data.deviceKey;
  const row = await ctx.store.records.deviceCodes.findByKey(deviceKey);
  if (row?.data.status !== 'pending' || row.expiresAt <= now || row.consumedAt !== null) return undefined;
  return { deviceKey, userCodeKey: key, clientId: row.clientId, scopes: row.data.scopes };
}

/**
 * Starts the pending request of a device authorization in this browser, for consent to the
 * device's scopes; it counts against the browser's and the address's quota first.
 * @param browser the browser id's hash
 * @throws OAuthError 429 `temporarily_unavailable` with `Retry-After` over the quota
 *   (`takeInteractionQuota`): nothing is started.
 */
export async function startDeviceRequest(
  ctx: DeviceServices,
  device: PendingDevice,
  browser: string,
  ip: string,
): Promise<Pending> {
  await takeInteractionQuota(ctx, browser, ip);
  const interaction: Interaction = {
    request: { clientId: device.clientId, scopes: device.scopes, tenant: null, acrValues: [] },
    params: { client_id: device.clientId, scope: device.scopes.join(' ') },
    browser,
    device: { deviceKey: device.deviceKey, userCodeKey: device.userCodeKey },
  };
  return { id: await ctx.interactions.create(device.clientId, interaction), interaction };
}

/**
 * Where a device's pending request goes next in this browser: the login page without a session;
 * the second factor, enrolment or a new sign-in when the session lacks what the user has or the
 * client requires (src/mfa/); the consent page until the person has answered it; else the answer,
 * by this session (`answerDevice`).
 */
export async function deviceNextStep(
  ctx: DeviceServices,
  session: Session | undefined,
  interaction: Interaction,
): Promise<{ page: string } | { answer: Session }> {
  if (!session) return { page: '/account/login' };
  const stepUp = await stepUpPage(ctx, session, ctx.mfa.requiredFor(ctx.clients.get(interaction.request.clientId)));
  if (stepUp) return { page: stepUp };
  return interaction.consented ? { answer: session } : { page: '/consent' };
}

import type { FactsServices } from './facts.js';
import type { InteractionsServices } from './interactions.js';
/** The services this module uses. */
export type DeviceServices = Pick<Services, 'clients' | 'interactions' | 'mfa' | 'store'> &
  FactsServices &
  InteractionsServices;

/**
 * Records the person's answer for a device: approved by `session` with the consented scopes, or
 * denied when `session` is undefined. The pending request ends and the user code stops working
 * either way (single use).
 * @returns false when the request is not a device's, or it, its device code or its user code was
 *   already answered or has expired: nothing was recorded.
 */
export async function answerDevice(
  ctx: DeviceServices,
  pending: Pending,
  session: Session | undefined,
): Promise<boolean> {
  const { id, interaction } = pending;
  const device = interaction.device;
  if (!device || !(await ctx.interactions.finish(id))) return false;
  const row = await ctx.store.records.deviceCodes.findByKey(device.deviceKey);
  const now = nowSeconds();
  const data = row?.data;
  if (!row || !data || data.status !== 'pending' || row.expiresAt <= now || row.consumedAt !== null) return false;
  const answered: DeviceCodeData = session
    ? {
        ...data,
        status: 'approved',
        scopes: data.scopes.filter((s) => interaction.consented?.includes(s)),
        subject: {
          subjectId: session.subjectId,
          authTime: session.authTime,
          amr: session.amr,
          idp: session.idp,
          sid: session.sid,
          ...(session.tenant ? { tenant: session.tenant } : {}),
        },
      }
    : { ...data, status: 'denied' };
  // The user code is single use: consuming it atomically makes exactly one answer count when two
  // browsers answer for the same code at once.
  if (!(await ctx.store.records.deviceCodes.consumeUserCode(device.userCodeKey, now))) return false;
  // Unconditional: the consumed user code makes this the only answer. A poll that read the row
  // before this write cannot write over it (polls use compare-and-set, grants/device-code.ts); at
  // worst this write drops a poll's bookkeeping (its time, a grown interval), never the answer.
  await ctx.store.records.deviceCodes.answer(device.deviceKey, answered, row.expiresAt);
  return true;
}
