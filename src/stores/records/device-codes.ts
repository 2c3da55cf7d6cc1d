/**
 * Device codes and their user codes (RFC 8628 §3.2): the device code is stored under the SHA-256
 * of the code, the user code under the SHA-256 of its canonical form (prefixed, so that it can
 * never name another kind's row). A user code is answered once (consumed atomically, RFC 8628
 * §3.3); the device code records the answer and the polls (§3.5) and is redeemed once (§3.4).
 * The person's answer holds the keys (the interaction records `deviceKey` and `userCodeKey`),
 * hence the key-based methods.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/** Stored state of a device code. */
export interface DeviceCodeData {
  scopes: string[];
  /** Key of the user code's row. */
  userCodeKey: string;
  status: 'pending' | 'approved' | 'denied';
  /** Unix milliseconds of the last poll. */
  lastPollAt?: number;
  /** Current polling interval in seconds (grows by 5 on each slow_down, RFC 8628 §3.5). */
  interval: number;
  /** The approving user, once approved. */
  subject?: { subjectId: string; authTime: number; amr: string[]; idp: string; sid: string; tenant?: string };
  [key: string]: unknown;
}

/** Stored data of a user code: which device code it approves. */
export interface UserCodeData {
  deviceKey: string;
  [key: string]: unknown;
}

/** Store key of a canonical user code. */
export function userCodeKey(code: string): string {
  return hashHandle(`user_code\u0000${code}`);
}

/** The `device_code` and `user_code` records. Times are Unix seconds. */
export class DeviceCodes {
  private readonly devices: RecordKind<DeviceCodeData>;
  private readonly userCodes: RecordKind<UserCodeData>;

  constructor(grants: GrantStore) {
    this.devices = new RecordKind(grants, 'device_code');
    this.userCodes = new RecordKind(grants, 'user_code');
  }

  /** Store key of a device code (the interaction and the user code name the device code by it). */
  keyOf(deviceCode: string): string {
    return hashHandle(deviceCode);
  }

  /** Stores a new device code (status `pending`) until `expiresAt`. */
  put(
    deviceCode: string,
    record: { clientId: string; data: DeviceCodeData; createdAt: number; expiresAt: number },
  ): Promise<void> {
    return this.devices.put({ key: this.keyOf(deviceCode), ...record });
  }

  /** The device code's record by its key, whatever its state, or undefined. */
  findByKey(deviceKey: string): Promise<GrantRecord<DeviceCodeData> | undefined> {
    return this.devices.find(deviceKey);
  }

  /**
   * Records a poll (its time, a grown interval) by compare-and-set on the data `expected` as read:
   * false when an answer, a redemption or another poll changed it first.
   */
  recordPoll(deviceKey: string, expected: DeviceCodeData, next: DeviceCodeData): Promise<boolean> {
    return this.devices.replaceData(deviceKey, expected, next);
  }

  /**
   * Records the person's answer unconditionally (the consumed user code makes it the only one);
   * false when the device code is revoked or gone.
   */
  answer(deviceKey: string, answered: DeviceCodeData, expiresAt: number): Promise<boolean> {
    return this.devices.update(deviceKey, answered, expiresAt);
  }

  /** Redeems the device code, atomically: of concurrent polls exactly one gets true. */
  consume(deviceKey: string, now: number): Promise<boolean> {
    return this.devices.consume(deviceKey, now);
  }

  /** The user code's record (canonical form) whatever its state, or undefined. */
  findUserCode(code: string): Promise<GrantRecord<UserCodeData> | undefined> {
    return this.userCodes.find(userCodeKey(code));
  }

  /** The user code's record by its key when live at `now` (neither answered, revoked nor expired), or undefined. */
  findLiveUserCode(key: string, now: number): Promise<GrantRecord<UserCodeData> | undefined> {
    return this.userCodes.findLive(key, now);
  }

  /**
   * Stores the user code `code` (canonical form) for the device code `deviceKey`, replacing an
   * expired or revoked row of the same code; it shares the device code's grant family.
   */
  saveUserCode(
    code: string,
    record: { clientId: string; deviceKey: string; createdAt: number; expiresAt: number },
  ): Promise<void> {
    const data: UserCodeData = { deviceKey: record.deviceKey };
    return this.userCodes.save({
      key: userCodeKey(code),
      clientId: record.clientId,
      familyId: record.deviceKey.slice(0, 22),
      data,
      createdAt: record.createdAt,
      expiresAt: record.expiresAt,
    });
  }

  /** Answers the user code, atomically: of two browsers answering at once exactly one gets true. */
  consumeUserCode(key: string, now: number): Promise<boolean> {
    return this.userCodes.consume(key, now);
  }
}
