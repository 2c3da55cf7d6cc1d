/**
 * Reading LDAP entries (ldapts `Entry`): attribute values by case-insensitive name, the subject
 * from a stable attribute (entryUUID, RFC 4530; Active Directory's binary objectGUID as a GUID),
 * role names from group DNs (RFC 4514), and whether an account is disabled or locked.
 */
import type { Entry } from 'ldapts';

type Value = Entry[string];

/** An entry's attributes by lower-cased name (servers may spell names differently from the config). */
export function attributesOf(entry: Entry): Map<string, Value> {
  const out = new Map<string, Value>();
  for (const [name, value] of Object.entries(entry)) if (name !== 'dn') out.set(name.toLowerCase(), value);
  return out;
}

/** The values of `name` as strings (Buffers read as UTF-8), possibly none. */
export function stringValues(attrs: Map<string, Value>, name: string): string[] {
  const value = attrs.get(name.toLowerCase());
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((v) => (typeof v === 'string' ? v : v.toString('utf8')));
}

/** Binary attributes Sigil reads: ldapts must hand them over as Buffers. */
export const BINARY_SUBJECT_ATTRIBUTES = new Set(['objectguid']);

/**
 * The subject of an entry: the `subjectAttribute`'s single value; a binary objectGUID in the
 * GUID's standard string form (its first three fields are little-endian, MS-DTYP §2.3.4), lower case.
 * @returns undefined when the entry has no single value (no subject, no sign-in).
 */
export function subjectOf(attrs: Map<string, Value>, subjectAttribute: string): string | undefined {
  const value = attrs.get(subjectAttribute.toLowerCase());
  const list = value === undefined ? [] : Array.isArray(value) ? value : [value];
  if (list.length !== 1) return undefined;
  const v = list[0]!;
  if (typeof v === 'string') return v.length > 0 && v.length <= 255 ? v : undefined;
  if (BINARY_SUBJECT_ATTRIBUTES.has(subjectAttribute.toLowerCase()))
    return v.length === 16 ? guidToString(v) : undefined;
  return undefined;
}

/** A 16-byte GUID as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (MS-DTYP §2.3.4.3). */
export function guidToString(b: Buffer): string {
  const hex = (bytes: number[]) => Buffer.from(bytes).toString('hex');
  return [
    hex([b[3]!, b[2]!, b[1]!, b[0]!]),
    hex([b[5]!, b[4]!]),
    hex([b[7]!, b[6]!]),
    hex([b[8]!, b[9]!]),
    b.subarray(10, 16).toString('hex'),
  ].join('-');
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The value to search a subject by: for objectGUID the 16 bytes (the inverse of `guidToString`),
 * for entryUUID the lower-case UUID; undefined when `subject` cannot be one of this attribute's
 * values (then the directory is not asked at all).
 */
export function subjectSearchValue(subject: string, subjectAttribute: string): Buffer | string | undefined {
  const attr = subjectAttribute.toLowerCase();
  if (attr === 'objectguid') {
    if (!GUID.test(subject)) return undefined;
    const h = subject.replace(/-/g, '');
    const bytes = Buffer.from(h, 'hex');
    return Buffer.concat([
      Buffer.from(bytes.subarray(0, 4)).reverse(),
      Buffer.from(bytes.subarray(4, 6)).reverse(),
      Buffer.from(bytes.subarray(6, 8)).reverse(),
      bytes.subarray(8),
    ]);
  }
  if (attr === 'entryuuid') return GUID.test(subject) ? subject : undefined;
  return subject.length > 0 && subject.length <= 255 ? subject : undefined;
}

/**
 * The role a group DN names: the value of `attribute` in its first RDN (RFC 4514 §2), with the
 * string escapes of §2.4 undone (`\,` and `\2C`); undefined when the first RDN has no such attribute.
 * `cn=Admins\, EU,ou=groups,dc=example,dc=org` with `cn` → `Admins, EU`.
 */
export function roleFromGroupDn(dn: string, attribute: string): string | undefined {
  const pairs: Array<[string, string]> = [];
  let i = 0;
  const want = attribute.toLowerCase();
  while (i < dn.length) {
    const eq = dn.indexOf('=', i);
    if (eq < 0) return undefined;
    const type = dn.slice(i, eq).trim().toLowerCase();
    const bytes: number[] = [];
    i = eq + 1;
    let end: string | undefined;
    while (i < dn.length) {
      const c = dn[i]!;
      if (c === ',' || c === '+') {
        end = c;
        i++;
        break;
      }
      if (c === '\\') {
        const pair = dn.slice(i + 1, i + 3);
        if (/^[0-9a-fA-F]{2}$/.test(pair)) {
          bytes.push(parseInt(pair, 16));
          i += 3;
          continue;
        }
        if (i + 1 >= dn.length) return undefined;
        bytes.push(...Buffer.from(dn[i + 1]!, 'utf8'));
        i += 2;
        continue;
      }
      const cp = dn.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      bytes.push(...Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
    pairs.push([type, Buffer.from(bytes).toString('utf8').trim()]);
    // Only the first RDN counts: stop at the first ',' (a '+' continues a multi-valued RDN).
    if (end !== '+') break;
  }
  const found = pairs.find(([type]) => type === want);
  return found && found[1].length > 0 ? found[1] : undefined;
}

/** Active Directory's userAccountControl flag ACCOUNTDISABLE (MS-ADTS §2.2.16). */
const ACCOUNTDISABLE = 0x2;

/**
 * The attributes `isDisabled` reads: AD's userAccountControl and lockoutTime, OpenLDAP ppolicy's
 * pwdAccountLockedTime.
 */
export const ACCOUNT_STATE_ATTRIBUTES = ['userAccountControl', 'lockoutTime', 'pwdAccountLockedTime'];

/**
 * Whether the account is disabled or locked: AD's userAccountControl has ACCOUNTDISABLE, or AD's
 * lockoutTime is set and not 0; OpenLDAP's password policy (draft-behera-ldap-password-policy
 * §5.3.3) has set pwdAccountLockedTime. A lock that has run out (pwdLockoutDuration, AD's lockout
 * duration) is still counted as long as the server keeps the attribute: both servers clear it at
 * the next successful bind, which Sigil's check makes, so the following sign-in succeeds.
 */
export function isDisabled(attrs: Map<string, Value>): boolean {
  const uac = Number(stringValues(attrs, 'userAccountControl')[0] ?? '0');
  if (Number.isInteger(uac) && (uac & ACCOUNTDISABLE) !== 0) return true;
  const lockout = stringValues(attrs, 'lockoutTime')[0];
  if (lockout !== undefined && lockout !== '0') return true;
  return stringValues(attrs, 'pwdAccountLockedTime').length > 0;
}
