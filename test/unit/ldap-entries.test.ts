/**
 * Reading LDAP entries (src/users/ldap/entries.ts) and the `userDirectories` config block:
 * role names from group DNs (RFC 4514), objectGUID as a GUID string and back, account states, and the
 * config's refusal of clear-text binds beyond loopback.
 */
import fc from 'fast-check';
import { DN } from 'ldapts';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../../src/config/loader.js';
import {
  attributesOf,
  guidToString,
  isDisabled,
  roleFromGroupDn,
  subjectOf,
  subjectSearchValue,
} from '../../src/users/ldap/entries.js';
import { testConfig } from '../helpers.js';

describe('roleFromGroupDn', () => {
  it('takes the first RDN value of the named attribute, undoing RFC 4514 escapes', () => {
    expect(roleFromGroupDn('cn=admins,ou=groups,dc=example,dc=org', 'cn')).toBe('admins');
    expect(roleFromGroupDn('CN=Domain Admins,CN=Users,DC=corp,DC=example', 'cn')).toBe('Domain Admins');
    expect(roleFromGroupDn('cn=Admins\\, EU,ou=groups,dc=x', 'cn')).toBe('Admins, EU');
    expect(roleFromGroupDn('cn=caf\\C3\\A9,dc=x', 'cn')).toBe('café');
    expect(roleFromGroupDn('ou=admins+cn=ops,dc=x', 'cn')).toBe('ops');
    // Not in the first RDN: no role (a group under cn=... is not named by a later RDN).
    expect(roleFromGroupDn('ou=admins,cn=groups,dc=x', 'cn')).toBeUndefined();
    expect(roleFromGroupDn('garbage', 'cn')).toBeUndefined();
    expect(roleFromGroupDn('cn=,dc=x', 'cn')).toBeUndefined();
  });

  it('reads back any value that ldapts escapes into a DN (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }).filter((v) => v.trim() === v && v.length > 0 && !v.includes('\0')),
        (value) => {
          const dn = new DN({ cn: value, ou: 'groups', dc: 'example' }).toString();
          expect(roleFromGroupDn(dn, 'cn')).toBe(value);
        },
      ),
    );
  });

  it('never throws on arbitrary input (property)', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (dn) => void roleFromGroupDn(dn, 'cn')));
  });
});

describe('objectGUID', () => {
  it('renders the 16 bytes in the GUID form (first three fields little-endian, MS-DTYP §2.3.4)', () => {
    const bytes = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    expect(guidToString(bytes)).toBe('33221100-5544-7766-8899-aabbccddeeff');
  });

  it('searches by the bytes it was rendered from (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (raw) => {
        const bytes = Buffer.from(raw);
        expect(subjectSearchValue(guidToString(bytes), 'objectGUID')).toEqual(bytes);
      }),
    );
  });

  it('asks nothing for a subject that cannot be a GUID or entryUUID', () => {
    expect(subjectSearchValue('1', 'objectGUID')).toBeUndefined();
    expect(subjectSearchValue('alice', 'entryUUID')).toBeUndefined();
    expect(subjectSearchValue('3c25408c-7d40-1041-9956-45d98ce3c285', 'entryUUID')).toBe(
      '3c25408c-7d40-1041-9956-45d98ce3c285',
    );
  });

  it('takes the subject from exactly one value', () => {
    expect(subjectOf(attributesOf({ dn: 'x', objectGUID: Buffer.alloc(16, 1) }), 'objectGUID')).toBe(
      '01010101-0101-0101-0101-010101010101',
    );
    expect(subjectOf(attributesOf({ dn: 'x', entryUUID: ['a', 'b'] }), 'entryUUID')).toBeUndefined();
    expect(subjectOf(attributesOf({ dn: 'x', entryuuid: [] }), 'entryUUID')).toBeUndefined();
  });
});

describe('isDisabled', () => {
  const state = (attrs: Record<string, string | string[]>) => isDisabled(attributesOf({ dn: 'x', ...attrs }));
  it('reads AD userAccountControl ACCOUNTDISABLE and lockoutTime, and ppolicy pwdAccountLockedTime', () => {
    expect(state({ userAccountControl: '512' })).toBe(false); // NORMAL_ACCOUNT
    expect(state({ userAccountControl: '514' })).toBe(true); // NORMAL_ACCOUNT | ACCOUNTDISABLE
    expect(state({ lockoutTime: '0' })).toBe(false);
    expect(state({ lockoutTime: '133500000000000000' })).toBe(true);
    expect(state({ pwdAccountLockedTime: '000001010000Z' })).toBe(true);
    expect(state({ pwdAccountLockedTime: [] })).toBe(false);
    expect(state({})).toBe(false);
  });
});

describe('userDirectories config', () => {
  const directory = (extra: Record<string, unknown>) => ({
    name: 'corp',
    type: 'ldap',
    bindDn: 'cn=s',
    bindPassword: 'p',
    baseDn: 'dc=x',
    ...extra,
  });
  const problems = (d: Record<string, unknown>): string[] => {
    try {
      resolveConfig(testConfig({ userDirectories: [d] as never }));
      return [];
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
  };

  it('takes ldaps://, ldap:// with startTls, and plain ldap:// only on loopback, with defaults filled in', () => {
    expect(problems(directory({ url: 'ldaps://ldap.example.org' }))).toEqual([]);
    expect(problems(directory({ url: 'ldap://ldap.example.org:389', startTls: true }))).toEqual([]);
    expect(problems(directory({ url: 'ldap://127.0.0.1:3389' }))).toEqual([]);
    const cfg = resolveConfig(
      testConfig({ userDirectories: [directory({ url: 'ldaps://ldap.example.org' })] as never }),
    );
    expect(cfg.userDirectories[0]).toMatchObject({
      usernameAttribute: 'uid',
      subjectAttribute: 'entryUUID',
      claimsCacheSeconds: 60,
      maxConnections: 5,
      timeoutSeconds: 5,
    });
  });

  it('refuses clear-text binds beyond loopback, bad URLs and attribute names, duplicate names', () => {
    expect(problems(directory({ url: 'ldap://ldap.example.org' })).join('\n')).toMatch(/userDirectories.*clear text/);
    expect(problems(directory({ url: 'ldaps://x', startTls: true })).join('\n')).toMatch(/startTls/);
    expect(problems(directory({ url: 'http://x' })).join('\n')).toMatch(/userDirectories/);
    expect(problems(directory({ url: 'ldaps://x', usernameAttribute: 'uid)(x=*' })).join('\n')).toMatch(
      /usernameAttribute/,
    );
    expect(() =>
      resolveConfig(
        testConfig({ userDirectories: [directory({ url: 'ldaps://x' }), directory({ url: 'ldaps://y' })] as never }),
      ),
    ).toThrow(/unique/);
  });
});
