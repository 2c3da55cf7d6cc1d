/**
 * Random handles and their stored form: handles are 256-bit random values in
 * base64url; the store only ever sees their SHA-256.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Random bytes from the CSPRNG, drawn 4 KiB at a time: one `randomBytes` call per ~100 handles
 * instead of one per handle (as Node does for `randomUUID`). Every byte is handed out once.
 */
let pool = Buffer.alloc(0);
let poolOffset = 0;
function randomSlice(length: number): Buffer {
  if (poolOffset + length > pool.length) {
    pool = randomBytes(4096);
    poolOffset = 0;
  }
  const slice = pool.subarray(poolOffset, poolOffset + length);
  poolOffset += length;
  return slice;
}

/** A new opaque handle: 32 random bytes, base64url (43 characters). RFC 6749 §10.10. */
export function newHandle(): string {
  return randomSlice(32).toString('base64url');
}

/** A new identifier (`jti`, grant family, session): 16 random bytes, base64url (22 characters). */
export function newId(): string {
  return randomSlice(16).toString('base64url');
}

/**
 * A new grant family id: the issuing millisecond as 12 hex digits, then 10 random bytes in
 * base64url (26 characters). Ids of one period sort together, so a burst of new families adds to
 * the end of the family index instead of dirtying a random page of it per row: in a batch of 20
 * SQLite inserts this cuts the write work per row by about a third. The family id is
 * never sent to a client, so its time prefix tells nobody anything.
 */
export function newFamilyId(): string {
  return Date.now().toString(16).padStart(12, '0') + randomSlice(10).toString('base64url');
}

/** The key a handle is stored under: SHA-256 of its UTF-8 bytes, base64url. */
export function hashHandle(handle: string): string {
  // crypto.hash: one call, no Hash object per digest (these run several times per request).
  return hash('sha256', handle, 'base64url');
}

/** SHA-256 digest of a UTF-8 string, as raw bytes. */
export function sha256(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}

/**
 * Compares a presented secret with stored SHA-256 digests in constant time per digest; every
 * digest is compared even after a match, so timing does not depend on the position.
 */
export function secretMatches(presented: string, digests: readonly Buffer[]): boolean {
  const candidate = sha256(presented);
  let ok = false;
  for (const digest of digests) ok = timingSafeEqual(candidate, digest) || ok;
  return ok;
}

/**
 * Turns a configured secret into its SHA-256 digest: `sha256:<base64>` is taken as the digest
 * itself, anything else is clear text and hashed here.
 * @throws Error when a `sha256:` value is not 32 bytes of base64.
 */
export function secretDigest(configured: string): Buffer {
  if (configured.startsWith('sha256:')) {
    const digest = Buffer.from(configured.slice('sha256:'.length), 'base64');
    if (digest.length !== 32) throw new Error('a "sha256:" secret must be the base64 of 32 bytes');
    return digest;
  }
  return sha256(configured);
}

/** Current time in Unix seconds. */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
