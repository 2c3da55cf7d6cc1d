/**
 * A real OpenLDAP server for the directory tests: Debian's slapd with the mdb backend,
 * the memberof overlay (memberOf on users) and the ppolicy overlay (pwdAccountLockedTime), in a
 * temp dir, on a free loopback port. Users come from an LDIF loaded with slapadd (passwords
 * hashed with slappasswd, {SSHA}); groups are added over LDAP afterwards so that memberof writes
 * memberOf (slapadd bypasses overlays).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'ldapts';

export const BASE = 'dc=example,dc=org';
export const PEOPLE = `ou=people,${BASE}`;
export const ROOT_DN = `cn=admin,${BASE}`;
export const ROOT_PW = 'root-secret';
export const SERVICE_DN = `cn=sigil,${BASE}`;
export const SERVICE_PW = 'service-secret';

/** @type {import('./ldap-server.d.mts').LdapUser[]} */
export const LDAP_USERS = [
  {
    uid: 'alice',
    password: 'alice-pw',
    cn: 'Alice Liddell',
    givenName: 'Alice',
    sn: 'Liddell',
    mail: 'alice@corp.example',
    groups: ['admins', 'devs'],
  },
  {
    uid: 'bob',
    password: 'bob-pw',
    cn: 'Bob Builder',
    givenName: 'Bob',
    sn: 'Builder',
    mail: 'bob@corp.example',
    groups: ['devs'],
  },
  {
    uid: 'carol',
    password: 'carol-pw',
    cn: 'Carol Keys',
    givenName: 'Carol',
    sn: 'Keys',
    mail: 'carol@corp.example',
    groups: ['devs'],
  },
  {
    uid: 'mallory',
    password: 'mallory-pw',
    cn: 'Mallory Locked',
    givenName: 'Mallory',
    sn: 'Locked',
    mail: 'mallory@corp.example',
    groups: ['devs'],
    locked: true,
  },
];

/** An {SSHA} hash of `password`, by slappasswd. */
/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freeLoopbackPort() {
  const server = createServer();
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  await new Promise((ok) => server.close(ok));
  return port;
}

function slappasswd(password) {
  return execFileSync('/usr/sbin/slappasswd', ['-h', '{SSHA}', '-s', password], { encoding: 'utf8' }).trim();
}

function ldif(users, options) {
  const entries = [
    `dn: ${BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example`,
    `dn: ${PEOPLE}\nobjectClass: organizationalUnit\nou: people`,
    `dn: ou=groups,${BASE}\nobjectClass: organizationalUnit\nou: groups`,
    `dn: ou=policies,${BASE}\nobjectClass: organizationalUnit\nou: policies`,
    // The password policy: no lockout by failures (Sigil's own limits count them), locks set by
    // hand; or, with `lockoutAfter`, a lockout after that many failed binds in a row, as Active
    // Directory's threshold has it (pwdFailureTime records each failed bind).
    `dn: cn=default,ou=policies,${BASE}\nobjectClass: person\nobjectClass: pwdPolicy\ncn: default\nsn: policy\npwdAttribute: userPassword\n` +
      (options.lockoutAfter ? `pwdLockout: TRUE\npwdMaxFailure: ${options.lockoutAfter}` : 'pwdLockout: FALSE'),
    `dn: ${SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: sigil\nuserPassword: ${slappasswd(SERVICE_PW)}`,
    ...users.map((u) =>
      [
        `dn: uid=${u.uid},${PEOPLE}`,
        'objectClass: inetOrgPerson',
        `uid: ${u.uid}`,
        `cn: ${u.cn}`,
        `givenName: ${u.givenName}`,
        `sn: ${u.sn}`,
        `mail: ${u.mail}`,
        `userPassword: ${slappasswd(u.password)}`,
        // The ppolicy value for "locked until an administrator unlocks" (draft-behera §5.3.3).
        ...(u.locked ? ['pwdAccountLockedTime: 000001010000Z'] : []),
      ].join('\n'),
    ),
  ];
  return `${entries.join('\n\n')}\n`;
}

function slapdConf(dir) {
  const modules = ['back_mdb', 'memberof', ...(existsSync('/usr/lib/ldap/ppolicy.la') ? ['ppolicy'] : [])];
  return [
    'include /etc/ldap/schema/core.schema',
    'include /etc/ldap/schema/cosine.schema',
    'include /etc/ldap/schema/inetorgperson.schema',
    'modulepath /usr/lib/ldap',
    ...modules.map((m) => `moduleload ${m}`),
    `pidfile ${join(dir, 'slapd.pid')}`,
    'database mdb',
    `suffix "${BASE}"`,
    `rootdn "${ROOT_DN}"`,
    `rootpw ${ROOT_PW}`,
    `directory ${join(dir, 'data')}`,
    'maxsize 10485760',
    'index uid,entryUUID eq',
    'overlay memberof',
    ...(modules.includes('ppolicy') ? ['overlay ppolicy', `ppolicy_default "cn=default,ou=policies,${BASE}"`] : []),
    'access to attrs=userPassword by self =xw by anonymous auth by * none',
    'access to * by users read by * none',
    '',
  ].join('\n');
}

/**
 * Starts a slapd with `users` and their groups; resolves once it answers a bind.
 * @type {import('./ldap-server.d.mts').startSlapd}
 */
export async function startSlapd(users = LDAP_USERS, options = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sigil-slapd-'));
  mkdirSync(join(dir, 'data'));
  const conf = join(dir, 'slapd.conf');
  writeFileSync(conf, slapdConf(dir));
  writeFileSync(join(dir, 'users.ldif'), ldif(users, options));
  execFileSync('/usr/sbin/slapadd', ['-f', conf, '-l', join(dir, 'users.ldif')], { stdio: 'pipe' });
  const port = await freeLoopbackPort();
  const url = `ldap://127.0.0.1:${port}`;
  let child;
  let output = '';

  const start = async () => {
    child = spawn('/usr/sbin/slapd', ['-h', url, '-f', conf, '-d', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (b) => (output += b.toString()));
    child.stderr?.on('data', (b) => (output += b.toString()));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`slapd exited with ${child.exitCode}:\n${output}`);
      const client = new Client({ url, connectTimeout: 500, timeout: 1000 });
      try {
        await client.bind(ROOT_DN, ROOT_PW);
        await client.unbind();
        return;
      } catch {
        await client.unbind().catch(() => {});
        if (Date.now() > deadline) throw new Error(`slapd did not answer:\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill('SIGTERM');
    await exited;
  };
  const admin = async () => {
    const client = new Client({ url, timeout: 5000 });
    await client.bind(ROOT_DN, ROOT_PW);
    return client;
  };

  await start();
  // Groups over LDAP, so that the memberof overlay gives each member its memberOf.
  const client = await admin();
  try {
    for (const group of [...new Set(users.flatMap((u) => u.groups))]) {
      await client.add(`cn=${group},ou=groups,${BASE}`, {
        objectClass: 'groupOfNames',
        cn: group,
        member: users.filter((u) => u.groups.includes(group)).map((u) => `uid=${u.uid},${PEOPLE}`),
      });
    }
  } finally {
    await client.unbind();
  }

  return {
    url,
    port,
    directoryConfig: (extra = {}) => ({
      name: 'corp',
      type: 'ldap',
      url,
      bindDn: SERVICE_DN,
      bindPassword: SERVICE_PW,
      baseDn: PEOPLE,
      usernameAttribute: 'uid',
      subjectAttribute: 'entryUUID',
      claims: { name: 'cn', given_name: 'givenName', family_name: 'sn', email: 'mail' },
      groupsAttribute: 'memberOf',
      roleFromGroup: 'cn',
      // Room for a slapd answering late on a loaded machine (with 2 s a merely slow answer is a
      // 503 and fails the test); no test waits for this bound to fire (a stopped slapd refuses
      // connections at once).
      timeoutSeconds: 10,
      ...extra,
    }),
    pid: () => child?.pid,
    admin,
    stop,
    start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
