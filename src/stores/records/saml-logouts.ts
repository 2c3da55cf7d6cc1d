/**
 * SAML single logouts under way through the browser (SAML Profiles §4.4.3.3, §4.4.3.4): the
 * service providers still to be sent a LogoutRequest, the one whose LogoutResponse is awaited, and
 * how the logout ends. Stored under the SHA-256 of the handle Sigil sends as RelayState with each
 * LogoutRequest (the SP returns it with its LogoutResponse, SAML Bindings §3.4.3); each step
 * replaces the data by compare-and-set and the last consumes the record, so that a response is
 * acted on once.
 */
import { hashHandle } from '../../crypto/handles.js';
import type { GrantRecord, GrantStore } from '../grant-store.js';
import { RecordKind } from './record-kind.js';

/**
 * What a SAML SP was told about the session (SAML Core §2.2.3, §2.7.2): the NameID exactly as
 * asserted (a LogoutRequest must repeat it, SAML Core §3.7.1) and the AuthnStatement's SessionIndex.
 */
export interface SamlParticipation {
  /** The SP's entity ID (the participant's client id is a digest of it: entity IDs are long). */
  entityId: string;
  nameId: string;
  /** The NameID's Format URI. */
  format: string;
  spNameQualifier?: string;
  sessionIndex: string;
}

/** How a SAML single logout ends once every SP has answered. */
export type SamlLogoutFinish =
  /** Sigil's signed-out page (front-channel logout frames, then the post-logout redirect, if any). */
  | { kind: 'signed-out'; frames: string[]; redirect?: string }
  /** A LogoutResponse to the SP whose LogoutRequest started it (SAML Profiles §4.4.3.4). */
  | { kind: 'respond'; frames: string[]; entityId: string; inResponseTo: string; relayState?: string; status: string };

/** A single logout under way. */
export interface SamlLogoutChain {
  /** The SPs still to be sent a LogoutRequest, in order. */
  remaining: SamlParticipation[];
  /** The SP whose LogoutResponse is awaited, and the ID of the request it must answer. */
  awaiting: { entityId: string; requestId: string };
  lang: string;
  finish: SamlLogoutFinish;
  [key: string]: unknown;
}

/** The `saml_logout` records, by RelayState handle. Times are Unix seconds. */
export class SamlLogouts {
  private readonly kind: RecordKind<SamlLogoutChain>;

  constructor(grants: GrantStore) {
    this.kind = new RecordKind(grants, 'saml_logout');
  }

  /** Stores a new chain under `handle` until `expiresAt` (the session it ends is over: no subject is kept). */
  put(handle: string, data: SamlLogoutChain, now: number, expiresAt: number): Promise<void> {
    return this.kind.put({ key: hashHandle(handle), clientId: '', subjectId: null, data, createdAt: now, expiresAt });
  }

  /** The live chain of `handle`, or undefined. */
  findLive(handle: string, now: number): Promise<GrantRecord<SamlLogoutChain> | undefined> {
    return this.kind.findLive(hashHandle(handle), now);
  }

  /** Moves the chain on from `expected` to `next`, once: false when another request did first. */
  advance(handle: string, expected: SamlLogoutChain, next: SamlLogoutChain): Promise<boolean> {
    return this.kind.replaceData(hashHandle(handle), expected, next);
  }

  /** Ends the chain, once: false when it was ended already or has expired. */
  consume(handle: string, now: number): Promise<boolean> {
    return this.kind.consume(hashHandle(handle), now);
  }
}
