/**
 * Store administration from the command line: `sigil keys`, `sigil users`,
 * `sigil clients`, a thin caller of the admin services (src/admin/): it parses the flags, prints
 * what the services return and maps their refusals (AdminError) to its messages and exit codes,
 * 2 for invalid input and 1 for the rest. Users and clients of the config file stay read-only and
 * win over stored ones with the same name, which these commands warn about. A client id may never
 * be a user's subject (RFC 9068 §5): `clients add` and `users add` refuse it against the config
 * file and the store (exit code 2). Every function returns the exit code.
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { ClientAdmin } from '../admin/clients.js';
import { mintInitialToken } from '../admin/registrations.js';
import { AdminError } from '../admin/errors.js';
import { KeyAdmin } from '../admin/keys.js';
import { ResourceAdmin } from '../admin/resources.js';
import { SessionAdmin } from '../admin/sessions.js';
import type { AdminAudit } from '../admin/user-types.js';
import { UserAdmin } from '../admin/users.js';
import type { ConfigOverrides, ResolvedConfig } from '../config/loader.js';
import { EventBus } from '../events/events.js';
import { parseDataKey } from '../keys/keys.js';
import { RECOVERY_KIND } from '../mfa/recovery.js';
import { openStore } from '../stores/sql.js';
import { nowSeconds } from '../crypto/handles.js';
import { AccountEmail } from '../email/account-email.js';
import { Mailer } from '../email/mailer.js';
import { productName } from '../config/product-name.js';
import { UpstreamProviders } from '../federation/upstream.js';
import { Resources } from '../resources/scopes.js';
import { FailureLimiter, MemoryFailureCounters } from '../limits/failure-limiter.js';
import { DirectoryUnavailable } from '../users/directory.js';
import { routeToStoredWebhooks } from '../webhooks/registry.js';
import { LdapDirectory } from '../users/ldap/ldap-directory.js';
import type { Store } from '../stores/types.js';

/** Flags the admin commands read. */
export interface AdminFlags {
  subject?: string;
  tenant?: string;
  claims?: string;
  password?: string;
  'password-stdin'?: boolean;
  email?: string;
  'email-verified'?: boolean;
  json?: string;
  file?: string;
  'max-registrations'?: string;
  lifetime?: string;
}

/** `sigil keys list | rotate [--alg ALG] | retire KID`: signing key management on the store. */
export async function keysCommand(cfg: ResolvedConfig, args: string[], alg: string | undefined): Promise<number> {
  const store = await openStore(cfg.storage);
  try {
    const keys = new KeyAdmin(store.keys, cfg, parseDataKey(process.env.SIGIL_DATA_KEY));
    const now = nowSeconds();
    const [action, kid] = args;
    if (action === 'list') {
      const at = (t: number | null) => (t === null ? '-' : new Date(t * 1000).toISOString());
      console.log(
        [
          'kid'.padEnd(43),
          'alg'.padEnd(6),
          'status'.padEnd(8),
          'created'.padEnd(24),
          'activates'.padEnd(24),
          'published until',
        ].join(' '),
      );
      for (const k of await keys.list(now))
        console.log(
          [
            k.kid.padEnd(43),
            k.alg.padEnd(6),
            k.status.padEnd(8),
            at(k.createdAt).padEnd(24),
            at(k.activatesAt).padEnd(24),
            at(k.publishedUntil),
          ].join(' '),
        );
      return 0;
    }
    if (action === 'rotate') {
      for (const k of await keys.rotate(alg, now))
        console.log(
          `added ${k.alg} key ${k.kid}: published now, signs from ${new Date(k.activatesAt * 1000).toISOString()}`,
        );
      return 0;
    }
    if (action === 'retire' && kid !== undefined) {
      await keys.retire(kid, now);
      console.log(`retired ${kid}: it signs no more and stays published for ${cfg.signingKeys.retentionSeconds} s`);
      return 0;
    }
    return usage('sigil keys list | rotate [--alg ALG] | retire KID');
  } catch (err) {
    return refused(err, (e) => (e.field === 'alg' ? `--alg ${e.message}` : undefined));
  } finally {
    await store.close();
  }
}

/**
 * `sigil users list | add | set-password | disable | enable | set-claims | remove`: users kept in
 * the store, argon2id hashes; `disable` (`UserAdmin.setActive`) also signs the user out
 * everywhere: sessions end (back-channel logout), tokens and unused codes are revoked, as
 * `remove` does before removing;
 * `sigil users mfa list|reset USERNAME`: a user's second factors (config or stored user);
 * `sigil users sessions revoke USERNAME`: ends a user's sessions.
 */
export async function usersCommand(cfg: ResolvedConfig, args: string[], flags: AdminFlags): Promise<number> {
  const store = await openStore(cfg.storage);
  const [action, name] = args;
  const tenant = flags.tenant ?? null;
  // The config's user directories, whose usernames `add` refuses (a library user's own directories
  // are not known to the command line). Connected only when asked.
  const directories = cfg.userDirectories.map(
    (d) => new LdapDirectory(d, new FailureLimiter(cfg.rateLimits, new MemoryFailureCounters())),
  );
  try {
    // The users added, changed and removed here are told to the webhooks by the running nodes.
    await routeToStoredWebhooks(store, cfg);
    const users = new UserAdmin(store, cfg, undefined, directories);
    if (action === 'list') {
      console.log(['subject'.padEnd(24), 'username'.padEnd(24), 'tenant'.padEnd(16), 'active', 'source'].join(' '));
      for (const u of await users.list())
        console.log(
          [
            u.subjectId.padEnd(24),
            u.username.padEnd(24),
            (u.tenant ?? '-').padEnd(16),
            String(u.isActive).padEnd(6),
            u.source,
          ].join(' '),
        );
      return 0;
    }
    if (action === 'add' && name !== undefined) {
      const claims = flags.claims === undefined ? undefined : jsonOf(flags.claims);
      const verified = flags['email-verified'] ?? false;
      const password = await readPassword(flags);
      const added = await users.create({
        username: name,
        subjectId: flags.subject,
        tenant,
        claims,
        password,
        email: flags.email,
        emailVerified: verified,
      });
      if (added.shadowedBy)
        console.warn(
          `sigil: warning: the config file has a user "${added.shadowedBy.username}" (${added.shadowedBy.subjectId}); config users win`,
        );
      console.log(`added user ${name} with subject ${added.subjectId}`);
      if (flags.email !== undefined && !verified) await sendVerification(cfg, store, users, added.subjectId);
      return 0;
    }
    if (action === 'set-email' && name !== undefined && args[2] !== undefined) {
      const verified = flags['email-verified'] ?? false;
      const subjectId = await users.setEmail(name, tenant, args[2], verified);
      console.log(`email of ${name} set${verified ? ' (verified)' : ''}`);
      if (!verified) await sendVerification(cfg, store, users, subjectId);
      return 0;
    }
    if (action === 'set-password' && name !== undefined) {
      await users.setPassword(name, tenant, await readPassword(flags));
      console.log(`password of ${name} changed`);
      return 0;
    }
    if (action === 'remove' && name !== undefined) {
      const user = await users.deleteNamed(name, tenant, cliAudit(cfg));
      console.log(`removed user ${user.username} (${user.subjectId})`);
      return 0;
    }
    if ((action === 'disable' || action === 'enable') && name !== undefined) {
      const done = await users.setActive({ username: name, tenant }, action === 'enable', cliAudit(cfg));
      const { subjectId, endedSessions: ended, revokedTokens: revoked } = done;
      if (action === 'enable') {
        console.log(`enabled user ${name} (${subjectId})`);
        return 0;
      }
      console.log(
        `disabled user ${name} (${subjectId}); ended ${ended} session${ended === 1 ? '' : 's'}, revoked ${revoked} token${revoked === 1 ? '' : 's'} and code${revoked === 1 ? '' : 's'}`,
      );
      return 0;
    }
    if (action === 'set-claims' && name !== undefined) {
      const subjectId = await users.setClaims(
        name,
        tenant,
        flags.claims === undefined ? undefined : jsonOf(flags.claims),
      );
      console.log(`claims of ${name} (${subjectId}) replaced`);
      return 0;
    }
    if (action === 'mfa') return await mfaCommand(cfg, users, args.slice(1), tenant);
    if (action === 'sessions' && name === 'revoke' && args[2] !== undefined) {
      const { ended } = await new SessionAdmin(store, cfg, pino({ level: 'silent' })).revokeAll(args[2], tenant);
      console.log(
        `ended ${ended} session${ended === 1 ? '' : 's'} of ${args[2]}; running nodes send the back-channel logout notifications`,
      );
      return 0;
    }
    return usage(
      'sigil users list | add USERNAME | set-password USERNAME | set-email USERNAME ADDRESS | disable USERNAME | enable USERNAME | set-claims USERNAME --claims JSON | remove USERNAME | sessions revoke USERNAME | mfa list|reset USERNAME',
    );
  } catch (err) {
    // Whether the directory holds the name is unknown: nothing was stored; the same command works once it answers.
    if (err instanceof DirectoryUnavailable) {
      console.error(
        `sigil: user directory "${err.directory}" cannot answer (${err.reason}); nothing was changed, try again later`,
      );
      return 1;
    }
    return refused(err, (e) => {
      if (e.field === 'subjectId') return `--subject: ${e.message}`;
      if (e.field === 'claims') return '--claims must be a JSON object';
      if (e.field === 'email') return `--email: ${e.message}`;
      if (e.field === 'password')
        return e.message === 'a password is required'
          ? 'give --password or --password-stdin'
          : `--password: ${e.message}`;
      // A config-file user is not one of the stored users these commands change.
      return e.code === 'read_only' ? `no stored user "${name}"` : undefined;
    });
  } finally {
    await Promise.all(directories.map((d) => d.close()));
    await store.close();
  }
}

/**
 * Mails the user a link that confirms their primary address, when the config has `email`;
 * otherwise says the address stays unverified. The SMTP server's refusal is reported, not thrown:
 * the address is stored either way.
 */
async function sendVerification(cfg: ResolvedConfig, store: Store, users: UserAdmin, subjectId: string): Promise<void> {
  if (!cfg.email) {
    console.log('the address is not verified (no "email" in the config to send a verification link)');
    return;
  }
  const mailer = new Mailer(cfg.email, productName(cfg), (line) => console.log(line));
  const log = pino({ level: 'silent' });
  try {
    const counters = new MemoryFailureCounters();
    const email = new AccountEmail({ store, users, counters, mailer, config: cfg.email, issuer: cfg.issuer, log });
    await email.requestVerification(subjectId, 'en');
    console.log('a verification link was sent to the address');
  } catch (err) {
    console.error(`sigil: the verification link could not be sent: ${(err as Error).message}`);
  } finally {
    mailer.close();
  }
}

/**
 * The resources managed at run time (`ResourceAdmin`), read once from the store: a client the
 * command line adds or changes is checked against them too, as on a running node, so that it may
 * list an API scope or identity resource created through /admin/v1.
 */
async function storedResources(
  store: Store,
  cfg: ResolvedConfig,
  raw: unknown,
  overrides: ConfigOverrides,
): Promise<ResourceAdmin> {
  const live = {
    resources: new Resources(cfg),
    upstream: new UpstreamProviders(cfg.identityProviders, cfg.issuer),
    apiSecrets: new Map(),
  };
  const resources = new ResourceAdmin(store, { config: cfg, raw, overrides, log: pino({ level: 'silent' }), live });
  await resources.reload();
  return resources;
}

/**
 * `sigil clients list | add | update | remove | initial-token`: clients kept in the store. A new
 * client is validated as if it were in the config file (errors name the field path); its secrets
 * are stored as SHA-256. `update` takes a JSON Merge Patch (RFC 7396) of the client's settings, as
 * PATCH /admin/v1/clients/{clientId} does. `initial-token` mints an initial access token for
 * dynamic registration (RFC 7591 §3), printed on stdout once (the note on stderr), stored as its
 * SHA-256.
 */
export async function clientsCommand(
  cfg: ResolvedConfig,
  raw: unknown,
  overrides: ConfigOverrides,
  args: string[],
  flags: AdminFlags,
): Promise<number> {
  const store = await openStore(cfg.storage);
  const [action, id] = args;
  try {
    await routeToStoredWebhooks(store, cfg);
    const resources =
      action === 'add' || action === 'update' ? await storedResources(store, cfg, raw, overrides) : undefined;
    const clients = new ClientAdmin(store, {
      config: cfg,
      raw,
      overrides,
      log: pino({ level: 'silent' }),
      ...(resources ? { resources } : {}),
    });
    if (action === 'list') {
      for (const c of await clients.list())
        console.log(`${c.clientId.padEnd(32)} ${c.source.padEnd(7)} ${c.allowedGrantTypes.join(',')}`);
      return 0;
    }
    if (action === 'add') {
      const text = flags.json ?? (flags.file ? readFileSync(flags.file, 'utf8') : undefined);
      if (text === undefined) return usage('give --json JSON or --file FILE');
      const { clientId, shadowedByConfig, secret } = await clients.create(jsonOf(text));
      if (shadowedByConfig)
        console.warn(`sigil: warning: the config file defines client "${clientId}"; it wins over the stored one`);
      console.log(`saved client ${clientId}; running nodes pick it up within ${cfg.signingKeys.reloadSeconds} s`);
      if (secret !== undefined) console.log(`client secret (shown once): ${secret}`);
      return 0;
    }
    if (action === 'update' && id !== undefined) {
      const text = flags.json ?? (flags.file ? readFileSync(flags.file, 'utf8') : undefined);
      if (text === undefined) return usage('give --json PATCH or --file FILE (a JSON Merge Patch, RFC 7396)');
      const { changed } = await clients.update(id, jsonOf(text), undefined);
      console.log(
        `updated client ${id}: ${changed.length === 0 ? 'nothing changed' : `changed ${changed.join(', ')}`}; running nodes pick it up within a few seconds`,
      );
      return 0;
    }
    if (action === 'remove' && id !== undefined) {
      await clients.delete(id);
      console.log(`removed client ${id}`);
      return 0;
    }
    if (action === 'initial-token') {
      // RFC 7591 §3: an initial access token for /connect/register, printed once, stored as its hash.
      const max = Number(flags['max-registrations'] ?? 1);
      const lifetime = Number(flags.lifetime ?? 86_400);
      if (!Number.isInteger(max) || max < 1 || max > 10_000)
        return usage('--max-registrations takes a whole number from 1 to 10000');
      if (!Number.isInteger(lifetime) || lifetime < 1 || lifetime > 31_536_000)
        return usage('--lifetime takes seconds from 1 to 31536000');
      const { token, expiresAt } = await mintInitialToken(store.registrations, max, lifetime);
      if (!cfg.registration.enabled)
        console.warn('sigil: warning: registration.enabled is false in the config: /connect/register is not served');
      console.log(token);
      console.warn(
        `an initial access token for ${max} registration(s), valid until ${new Date(expiresAt * 1000).toISOString()}; shown once`,
      );
      return 0;
    }
    return usage(
      'sigil clients list | add (--json JSON | --file FILE) | update CLIENT_ID (--json PATCH | --file FILE) | remove CLIENT_ID | initial-token [--max-registrations N] [--lifetime SECONDS]',
    );
  } catch (err) {
    // A config-file client is not one of the stored clients these commands change.
    return refused(err, (e) =>
      e.code === 'read_only' && action !== 'update' ? `no stored client "${id}"` : undefined,
    );
  } finally {
    await store.close();
  }
}

/**
 * `sigil users mfa list USERNAME` prints the user's second factors (kind, id, added, last used;
 * recovery codes as a count of unused ones; security keys and passkeys too); `sigil users mfa
 * reset USERNAME` removes them all (see `UserAdmin.resetSecondFactors`). The user is a config-file
 * one, else a stored one (`--tenant T` picks the tenant). A reset is an audit event
 * (`mfa_removed`, endpoint `cli`) on stderr.
 */
async function mfaCommand(
  cfg: ResolvedConfig,
  users: UserAdmin,
  args: string[],
  tenant: string | null,
): Promise<number> {
  const [action, name] = args;
  if ((action !== 'list' && action !== 'reset') || name === undefined)
    return usage('sigil users mfa list|reset USERNAME [--tenant T]');
  if (action === 'list') {
    const { factors } = await users.secondFactors(name, tenant);
    const at = (t: number | null) => (t === null ? '-' : new Date(t * 1000).toISOString());
    const codes = factors.filter((f) => f.kind === RECOVERY_KIND);
    console.log(['kind'.padEnd(16), 'id'.padEnd(24), 'added'.padEnd(24), 'last used'].join(' '));
    for (const f of factors.filter((f) => f.kind !== RECOVERY_KIND))
      console.log([f.kind.padEnd(16), f.id.padEnd(24), at(f.createdAt).padEnd(24), at(f.lastUsedAt)].join(' '));
    if (codes.length > 0)
      console.log(`${RECOVERY_KIND}: ${codes.filter((f) => f.counter === 0).length} of ${codes.length} unused`);
    if (factors.length === 0) console.log(`${name} has no second factor`);
    return 0;
  }
  const { subjectId, removed } = await users.resetSecondFactors(name, tenant, cliAudit(cfg));
  console.log(`removed ${removed} second factor${removed === 1 ? '' : 's'} of ${name} (${subjectId})`);
  return 0;
}

/** The audit of a change made from the command line: endpoint `cli`, its events on stderr. */
function cliAudit(cfg: ResolvedConfig): AdminAudit {
  return {
    events: new EventBus(
      pino({ level: cfg.logLevel === 'silent' ? 'silent' : 'info' }, pino.destination({ dest: 2, sync: true })),
    ),
    endpoint: 'cli',
  };
}

async function readPassword(flags: AdminFlags): Promise<string | undefined> {
  if (flags.password !== undefined) return flags.password;
  if (!flags['password-stdin']) return undefined;
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.replace(/\r?\n$/, '');
}

/** A flag's JSON value; text that is not JSON is passed on as it is, which the services refuse as not a JSON object. */
function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Prints an admin service's refusal and returns its exit code: 2 for invalid input, 1 for the
 * rest. `reword` gives the command's own wording where it differs from the service's (a flag's
 * name). Anything but an AdminError is rethrown: `main` reports it with exit code 1.
 */
function refused(err: unknown, reword: (e: AdminError) => string | undefined): number {
  if (!(err instanceof AdminError)) throw err;
  console.error(`sigil: ${reword(err) ?? err.message}`);
  return err.code === 'invalid' ? 2 : 1;
}

function usage(message: string): number {
  console.error(`sigil: ${message}`);
  return 2;
}
