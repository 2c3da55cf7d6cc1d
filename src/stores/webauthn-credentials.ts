/**
 * Stored WebAuthn credentials (W3C WebAuthn Level 3 §7.1 step 27, §7.2 step 22): passkeys and
 * security keys, one row per credential in `webauthn_credentials` (migration
 * `0007_webauthn`). Part of the one SQL store; reached as `store.webauthn`.
 */
import type { Kysely } from 'kysely';
import type { Database, WebAuthnCredentialsTable } from './tables.js';

/**
 * What a credential is for: `passkey` (discoverable, user verification required: a sign-in on its
 * own) or `security-key` (a second factor after the password).
 */
export type WebAuthnKind = 'passkey' | 'security-key';

/** One registered credential. */
export interface StoredWebAuthnCredential {
  /** The credential ID, base64url (at most 1023 bytes before encoding, WebAuthn L3 §5.1). */
  id: string;
  subjectId: string;
  kind: WebAuthnKind;
  /** The COSE public key, base64url. */
  publicKey: string;
  /** The last signature counter seen (WebAuthn L3 §6.1.1); 0 when the authenticator keeps none. */
  counter: number;
  /** Transports reported at registration (`usb`, `internal`, `hybrid`, ...). */
  transports: string[];
  /** A label shown to the user. */
  name: string;
  /** Whether the authenticator reported the credential backed up (synced passkey). */
  backedUp: boolean;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds of the last successful use, or null. */
  lastUsedAt: number | null;
}

/** The credentials of every user. */
export interface WebAuthnCredentialStore {
  /** Stores a new credential. False when a credential with that ID is registered already. */
  add(credential: StoredWebAuthnCredential): Promise<boolean>;
  /** The credential with that ID, or undefined. */
  get(id: string): Promise<StoredWebAuthnCredential | undefined>;
  /** A user's credentials, oldest first. */
  list(subjectId: string): Promise<StoredWebAuthnCredential[]>;
  /**
   * Records a use: sets the counter to `counter` and `lastUsedAt` to `now`, atomically and only
   * while the stored counter is still `expected` (as read before the signature check). Of two
   * concurrent uses that read the same counter, exactly one gets true.
   */
  recordUse(id: string, expected: number, counter: number, now: number): Promise<boolean>;
  /** Removes one of a user's credentials; false when the user has no credential with that ID. */
  remove(subjectId: string, id: string): Promise<boolean>;
}

function toCredential(row: WebAuthnCredentialsTable): StoredWebAuthnCredential {
  return {
    id: row.id,
    subjectId: row.subject_id,
    kind: row.kind === 'passkey' ? 'passkey' : 'security-key',
    publicKey: row.public_key,
    counter: Number(row.counter),
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    backedUp: Number(row.backed_up) === 1,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

/** `WebAuthnCredentialStore` on the SQL store's Kysely instance (SQLite or PostgreSQL). */
export class SqlWebAuthnCredentials implements WebAuthnCredentialStore {
  /** @param db the store's Kysely instance; its schema has the `webauthn_credentials` table. */
  constructor(private readonly db: Kysely<Database>) {}

  async add(c: StoredWebAuthnCredential): Promise<boolean> {
    const result = await this.db
      .insertInto('webauthn_credentials')
      .values({
        id: c.id,
        subject_id: c.subjectId,
        kind: c.kind,
        public_key: c.publicKey,
        counter: c.counter,
        transports: JSON.stringify(c.transports),
        name: c.name,
        backed_up: c.backedUp ? 1 : 0,
        created_at: c.createdAt,
        last_used_at: c.lastUsedAt,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return result.numInsertedOrUpdatedRows === 1n;
  }

  async get(id: string): Promise<StoredWebAuthnCredential | undefined> {
    const row = await this.db.selectFrom('webauthn_credentials').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toCredential(row) : undefined;
  }

  async list(subjectId: string): Promise<StoredWebAuthnCredential[]> {
    const rows = await this.db
      .selectFrom('webauthn_credentials')
      .selectAll()
      .where('subject_id', '=', subjectId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toCredential);
  }

  async recordUse(id: string, expected: number, counter: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('webauthn_credentials')
      .set({ counter, last_used_at: now })
      .where('id', '=', id)
      .where('counter', '=', expected)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async remove(subjectId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('webauthn_credentials')
      .where('id', '=', id)
      .where('subject_id', '=', subjectId)
      .executeTakeFirst();
    return result.numDeletedRows === 1n;
  }
}
