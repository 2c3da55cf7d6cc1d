/**
 * The answer to a device's pending request (RFC 8628 §3.3): the person approves or denies at
 * `/device`; the device learns which by polling the token endpoint (grants/device-code.ts).
 */
import type { Services } from '../services.js';
import { nowSeconds } from '../crypto/handles.js';
import type { DeviceCodeData } from '../stores/records/device-codes.js';
import type { Session } from '../users/sessions.js';
import type { Pending } from './interactions.js';

/** The services this module uses. */
export type DeviceServices = Pick<Services, 'interactions' | 'store'>;

/**
 * Records the person's answer for a device: approved by `session` with the consented scopes, or
 * denied when `session` is undefined. The pending request ends and the user code stops working
 * either way (single use).
 * @returns false when the request is not a device's, or it, its device code or its user code was
 *   already answered or has expired: nothing was recorded.
 */
export async function answerDevice(ctx: DeviceServices, pending: Pending, session: Session | undefined): Promise<boolean> {
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
