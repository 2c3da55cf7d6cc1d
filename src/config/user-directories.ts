/**
 * The `userDirectories` block of the config: directories of users that Sigil asks after
 * its own users (config users, then stored users), in the order listed. One kind today: LDAP
 * (OpenLDAP, Active Directory and other LDAPv3 servers, RFC 4511).
 */
import * as z from 'zod';
import { LOOPBACK } from './hosts.js';

const nonEmpty = z.string().min(1);
/** An LDAP attribute description (RFC 4512 §2.5: a descriptor or an OID, no options here). */
const attribute = z.string().regex(/^([A-Za-z][A-Za-z0-9-]*|\d+(\.\d+)+)$/, 'an LDAP attribute name');

const ldapDirectory = z
  .strictObject({
    name: nonEmpty
      .max(50)
      .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only')
      .meta({ description: "The directory's name, in logs (its users' idp claim stays local)" }),
    type: z.literal('ldap').meta({ description: 'The directory kind; ldap (OpenLDAP, Active Directory)' }),
    url: z
      .string()
      .regex(/^ldaps?:\/\/[^/?#\s]+\/?$/, 'ldap://host[:port] or ldaps://host[:port]')
      .meta({
        description: 'The server: ldaps://host[:port], or ldap://host[:port] (with startTls outside loopback)',
        spec: 'RFC 4516',
      }),
    startTls: z
      .boolean()
      .default(false)
      .meta({ description: 'Upgrade an ldap:// connection with StartTLS before binding', spec: 'RFC 4511 §4.14' }),
    bindDn: nonEmpty.meta({ description: 'The service account that searches for users' }),
    bindPassword: nonEmpty.meta({
      description: 'The service account\'s password (best given as { "$env": ... } or { "$file": ... })',
    }),
    baseDn: nonEmpty.meta({ description: 'Where users are searched (subtree)' }),
    usernameAttribute: attribute.default('uid').meta({
      description:
        'The attribute the sign-in name is compared with (Active Directory: sAMAccountName or userPrincipalName)',
    }),
    subjectAttribute: attribute.default('entryUUID').meta({
      description:
        'A stable attribute that becomes the subject: entryUUID (OpenLDAP, RFC 4530) or objectGUID (Active Directory, rendered as a GUID); never the username',
    }),
    claims: z
      .record(nonEmpty, attribute)
      .default({ name: 'cn', given_name: 'givenName', family_name: 'sn', email: 'mail' })
      .meta({ description: 'Claim name → attribute; one value gives a string, several an array' }),
    groupsAttribute: attribute.optional().meta({
      description: "The user's attribute naming their groups by DN (memberOf); each group becomes a role claim value",
    }),
    roleFromGroup: attribute.default('cn').meta({
      description: "Which attribute of a group DN's first RDN is the role value (cn=admins,ou=groups,... → admins)",
    }),
    claimsCacheSeconds: z.number().int().min(0).max(3600).default(60).meta({
      description:
        "How long a user's attributes read for userinfo, refresh and sessions are reused before the directory is asked again, seconds; 0: every time",
    }),
    maxConnections: z
      .number()
      .int()
      .positive()
      .max(100)
      .default(5)
      .meta({ description: 'Connections to the server at most; further requests wait for one (up to timeoutSeconds)' }),
    timeoutSeconds: z.number().int().positive().max(60).default(5).meta({
      description:
        'Connect timeout, operation timeout and the longest wait for a free connection, seconds; then the directory counts as unavailable',
    }),
    maxFailedBinds: z.number().int().min(0).max(100).default(4).meta({
      description:
        "Wrong passwords of one directory account that Sigil passes on to the server (binds) before it stops binding for that account: further sign-ins with its username answer 'too many failed attempts' (429, Retry-After) without a bind, from every address, the right password included, until failedBindWindowSeconds pass without a wrong one, or at once after a right one. Keeps anyone who knows a username from pushing the account past the directory's own lockout (Active Directory's lockout threshold, OpenLDAP's pwdMaxFailure), which would lock its owner out of everything the directory serves; the price is that the same person can pause the account's password sign-in at Sigil (passkeys still work). Set it below the directory's threshold, leaving room for the owner's own typos elsewhere (threshold 5: 4 or less). Counted across workers and nodes, as rateLimits are. 0: no cap (a directory without a lockout)",
    }),
    knownBrowserBinds: z.number().int().min(0).max(100).default(2).meta({
      description:
        "How many of maxFailedBinds are kept for the account's known browsers: browsers that signed the account in with its password before (knownBrowserLifetime). Sign-ins without such a browser (other browsers, the password grant) together get maxFailedBinds minus this many binds per window; the account's known browsers together get this many, then what the others left. So the directory still sees at most maxFailedBinds wrong passwords per window in all, and nobody without a known browser of the account can pause its password sign-in on one. At most maxFailedBinds - 1 is used. 0: every sign-in shares one count, as without known browsers",
    }),
    failedBindWindowSeconds: z.number().int().positive().max(86400).default(900).meta({
      description:
        "How long after an account's last wrong password its count of maxFailedBinds lapses, seconds; at least the directory's own reset time of its failure count (Active Directory: 'Reset account lockout counter after'; OpenLDAP: pwdFailureCountInterval), else the directory may still count failures that Sigil forgot",
    }),
  })
  // Passwords travel in the bind: never in clear text beyond this machine (RFC 4513 §6.3.1).
  .refine(
    (d) =>
      d.url.startsWith('ldaps://') || d.startTls || LOOPBACK.test(new URL(d.url.replace(/^ldap/, 'http')).hostname),
    {
      message:
        'ldap:// sends passwords in clear text: use ldaps://, or startTls: true (plain ldap:// only on a loopback host)',
      path: ['url'],
    },
  )
  .refine((d) => !(d.url.startsWith('ldaps://') && d.startTls), {
    message: 'startTls is for ldap:// URLs; ldaps:// is TLS already',
    path: ['startTls'],
  });

/** One LDAP directory of `userDirectories`. */
export type LdapDirectoryConfig = z.output<typeof ldapDirectory>;

/** `userDirectories`: the directories, asked in this order after Sigil's own users. */
export const userDirectories = z
  .array(ldapDirectory)
  .max(10)
  .default([])
  .refine((ds) => new Set(ds.map((d) => d.name)).size === ds.length, 'directory names must be unique')
  .meta({
    description: 'Directories of users asked in order after config users and stored users (LDAP, Active Directory)',
  });
