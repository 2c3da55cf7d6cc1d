/**
 * Store administration from the command line (DESIGN §5): `sigil keys`, `sigil users`,
 * `sigil clients`. Users and clients of the config file stay read-only and win over stored ones
 * with the same name, which these commands warn about. A client id may never be a user's subject
 * (RFC 9068 §5): `clients add` and `users add` refuse it against the config file and the store
 * (exit code 2). Every function returns the exit code.
 */
import { readFileSync } from 'node:fs';
import { hash } from '@node-rs/argon2';
import { type ConfigOverrides, type ResolvedConfig, resolveConfig } from '../config/loader.js';
import { clientSubjectCollision } from '../config/schema.js';
import { describeKeys, parseDataKey, rotateKeys } from '../keys/keys.js';
import { pino } from 'pino';
import { EventBus } from '../events/events.js';
import { LogoutService } from '../logout/logout.js';
import { MfaService } from '../mfa/factors.js';
import { RECOVERY_KIND } from '../mfa/recovery.js';
import { openStore } from '../stores/sql.js';
import { loadStoredClients } from '../stores/stored-clients.js';
import type { Store } from '../stores/types.js';
import { ClientRegistry } from '../validation/client-auth.js';
import { newId, nowSeconds, secretDigest } from '../tokens/handles.js';

/** Flags the admin commands read. */
export interface AdminFlags {
  subject?: string;
  tenant?: string;
  claims?: string;
  password?: string;
  'password-stdin'?: boolean;
  json?: string;
  file?: string;
}

/** `sigil keys list | rotate [--alg ALG] | retire KID`: signing key management on the store. */
export async function keysCommand(cfg: ResolvedConfig, args: string[], alg: string | undefined): Promise<number> {
  const store = await openStore(cfg.storage);
  try {
    const dataKey = parseDataKey(process.env.SIGIL_DATA_KEY);
    const policy = { ...cfg.signingKeys, ...(dataKey ? { dataKey } : {}) };
    const now = nowSeconds();
    const [action, kid] = args;
    if (action === 'list') {
      const at = (t: number | null) => (t === null ? '-' : new Date(t * 1000).toISOString());
      console.log(['kid'.padEnd(43), 'alg'.padEnd(6), 'status'.padEnd(8), 'created'.padEnd(24), 'activates'.padEnd(24), 'published until'].join(' '));
      for (const k of describeKeys(await store.keys.listKeys(), policy, now))
        console.log([k.kid.padEnd(43), k.alg.padEnd(6), k.status.padEnd(8), at(k.createdAt).padEnd(24), at(k.activatesAt).padEnd(24), at(k.publishedUntil)].join(' '));
      return 0;
    }
    if (action === 'rotate') {
      const algorithms = alg === undefined ? cfg.signingAlgorithms : cfg.signingAlgorithms.filter((a) => a === alg);
      if (algorithms.length === 0) return usage(`--alg ${alg} is not one of signingAlgorithms`);
      for (const k of await rotateKeys(store.keys, algorithms, policy, now))
        console.log(`added ${k.alg} key ${k.kid}: published now, signs from ${new Date(k.activatesAt * 1000).toISOString()}`);
      return 0;
    }
    if (action === 'retire' && kid !== undefined) {
      if (!(await store.keys.retireKey(kid, now))) return failure(`no live key ${kid}`);
      console.log(`retired ${kid}: it signs no more and stays published for ${cfg.signingKeys.retentionSeconds} s`);
      return 0;
    }
    return usage('sigil keys list | rotate [--alg ALG] | retire KID');
  } finally {
    await store.close();
  }
}

/**
 * `sigil users list | add | set-password | remove`: users kept in the store, argon2id hashes;
 * `sigil users mfa list|reset USERNAME`: a user's second factors (config or stored user).
 */
export async function usersCommand(cfg: ResolvedConfig, args: string[], flags: AdminFlags): Promise<number> {
  const store = await openStore(cfg.storage);
  try {
    const [action, name] = args;
    if (action === 'list') {
      console.log(['subject'.padEnd(24), 'username'.padEnd(24), 'tenant'.padEnd(16), 'active', 'source'].join(' '));
      for (const u of cfg.users)
        console.log([u.subjectId.padEnd(24), u.username.padEnd(24), (u.tenant ?? '-').padEnd(16), String(u.isActive).padEnd(6), 'config'].join(' '));
      for (const u of await store.users.listUsers())
        console.log([u.subjectId.padEnd(24), u.username.padEnd(24), (u.tenant ?? '-').padEnd(16), String(u.isActive).padEnd(6), 'store'].join(' '));
      return 0;
    }
    if (action === 'add' && name !== undefined) {
      if (name.length > 100) return usage('the username is longer than 100 characters');
      const tenant = flags.tenant ?? null;
      const subjectId = flags.subject ?? newId();
      const claims = flags.claims === undefined ? {} : parseJsonObject(flags.claims, '--claims');
      if (claims === undefined) return 2;
      if (await store.users.findUserByUsername(name, tenant)) return failure(`a stored user "${name}" exists already`);
      // RFC 9068 §5: a subject may not be a client id (config or stored), see clientSubjectCollision.
      const client = cfg.clients.find((c) => c.clientId === subjectId)?.clientId ?? (await store.clients.listClients()).find((c) => c.clientId === subjectId)?.clientId;
      if (client !== undefined) return usage(`--subject: ${clientSubjectCollision(String(client), `user "${name}"`)}`);
      warnIfConfigUser(cfg, name, subjectId);
      const password = await readPassword(flags);
      await store.users.addUser({ subjectId, username: name, tenant, passwordHash: password === undefined ? null : await hash(password), claims, isActive: true });
      console.log(`added user ${name} with subject ${subjectId}`);
      return 0;
    }
    if (action === 'set-password' && name !== undefined) {
      const user = await store.users.findUserByUsername(name, flags.tenant ?? null);
      if (!user) return failure(`no stored user "${name}"`);
      const password = await readPassword(flags);
      if (password === undefined) return usage('give --password or --password-stdin');
      await store.users.setPasswordHash(user.subjectId, await hash(password));
      console.log(`password of ${name} changed`);
      return 0;
    }
    if (action === 'remove' && name !== undefined) {
      const user = (await store.users.findUserByUsername(name, flags.tenant ?? null)) ?? (await store.users.findUserBySubject(name));
      if (!user || !(await store.users.removeUser(user.subjectId))) return failure(`no stored user "${name}"`);
      console.log(`removed user ${user.username} (${user.subjectId})`);
      return 0;
    }
    if (action === 'mfa') return await mfaCommand(cfg, store, args.slice(1), flags);
    if (action === 'sessions' && name === 'revoke' && args[2] !== undefined) return await revokeSessions(cfg, store, args[2], flags.tenant ?? null);
    return usage('sigil users list | add USERNAME | set-password USERNAME | remove USERNAME | sessions revoke USERNAME | mfa list|reset USERNAME');
  } finally {
    await store.close();
  }
}

/**
 * `sigil clients list | add | remove`: clients kept in the store. A new client is validated as if
 * it were in the config file (errors name the field path); its secrets are stored as SHA-256.
 */
export async function clientsCommand(cfg: ResolvedConfig, raw: unknown, overrides: ConfigOverrides, args: string[], flags: AdminFlags): Promise<number> {
  const store = await openStore(cfg.storage);
  try {
    const [action, id] = args;
    if (action === 'list') {
      const stored = await store.clients.listClients();
      for (const c of cfg.clients) console.log(`${c.clientId.padEnd(32)} config  ${c.allowedGrantTypes.join(',')}`);
      for (const c of stored) console.log(`${String(c.clientId).padEnd(32)} store   ${(c.allowedGrantTypes as string[] | undefined)?.join(',') ?? ''}`);
      return 0;
    }
    if (action === 'add') {
      const text = flags.json ?? (flags.file ? readFileSync(flags.file, 'utf8') : undefined);
      if (text === undefined) return usage('give --json JSON or --file FILE');
      const client = parseJsonObject(text, 'client');
      if (!client) return 2;
      const clientId = String(client.clientId ?? '');
      const base = raw as { clients?: unknown[] };
      const others = (base.clients ?? []).filter((c) => (c as { clientId?: unknown }).clientId !== clientId);
      // Validated together with the config file, so scope names and the like are checked too.
      resolveConfig({ ...base, clients: [...others, client] }, overrides);
      const user = await store.users.findUserBySubject(clientId);
      if (user) return usage(clientSubjectCollision(clientId, `stored user "${user.username}"`));
      if (cfg.clients.some((c) => c.clientId === clientId))
        console.warn(`sigil: warning: the config file defines client "${clientId}"; it wins over the stored one`);
      const secrets = Array.isArray(client.clientSecrets) ? (client.clientSecrets as string[]) : [];
      const hashed = secrets.map((s) => `sha256:${secretDigest(s).toString('base64')}`);
      await store.clients.saveClient(clientId, { ...client, clientSecrets: hashed });
      console.log(`saved client ${clientId}; running nodes pick it up within ${cfg.signingKeys.reloadSeconds} s`);
      return 0;
    }
    if (action === 'remove' && id !== undefined) {
      if (!(await store.clients.removeClient(id))) return failure(`no stored client "${id}"`);
      console.log(`removed client ${id}`);
      return 0;
    }
    return usage('sigil clients list | add (--json JSON | --file FILE) | remove CLIENT_ID');
  } finally {
    await store.close();
  }
}

/**
 * `sigil users mfa list USERNAME` prints the user's second factors (kind, id, added, last used;
 * recovery codes as a count of unused ones; security keys and passkeys too); `sigil users mfa
 * reset USERNAME` removes them all, WebAuthn credentials included, so
 * the next sign-in is by password alone (or enrolls anew where MFA is required). The user is a
 * stored one, else a config-file one (`--tenant T` picks the tenant). A reset is an audit event
 * (`mfa_removed`, endpoint `cli`) on stderr.
 */
async function mfaCommand(cfg: ResolvedConfig, store: Store, args: string[], flags: AdminFlags): Promise<number> {
  const [action, name] = args;
  if ((action !== 'list' && action !== 'reset') || name === undefined) return usage('sigil users mfa list|reset USERNAME [--tenant T]');
  const tenant = flags.tenant ?? null;
  const stored = await store.users.findUserByUsername(name, tenant);
  const configured = cfg.users.find((u) => u.username.toLowerCase() === name.toLowerCase() && (tenant === null || (u.tenant ?? null) === tenant));
  const subjectId = configured?.subjectId ?? stored?.subjectId;
  if (subjectId === undefined) return failure(`no user "${name}"`);
  // TOTP, recovery codes and WebAuthn credentials (security keys and passkeys): one list, one reset.
  const mfa = new MfaService(store.factors, store.grants, cfg.mfa, undefined, store.webauthn);
  const factors = await mfa.listFactors(subjectId);
  const at = (t: number | null) => (t === null ? '-' : new Date(t * 1000).toISOString());
  if (action === 'list') {
    const codes = factors.filter((f) => f.kind === RECOVERY_KIND);
    console.log(['kind'.padEnd(16), 'id'.padEnd(24), 'added'.padEnd(24), 'last used'].join(' '));
    for (const f of factors.filter((f) => f.kind !== RECOVERY_KIND))
      console.log([f.kind.padEnd(16), f.id.padEnd(24), at(f.createdAt).padEnd(24), at(f.lastUsedAt)].join(' '));
    if (codes.length > 0) console.log(`${RECOVERY_KIND}: ${codes.filter((f) => f.counter === 0).length} of ${codes.length} unused`);
    if (factors.length === 0) console.log(`${name} has no second factor`);
    return 0;
  }
  const removed = await mfa.removeAllFactors(subjectId);
  const events = new EventBus(pino({ level: cfg.logLevel === 'silent' ? 'silent' : 'info' }, pino.destination({ dest: 2, sync: true })));
  for (const kind of new Set(factors.map((f) => f.kind))) events.emit({ name: 'mfa_removed', endpoint: 'cli', subjectId, factor: kind });
  console.log(`removed ${removed} second factor${removed === 1 ? '' : 's'} of ${name} (${subjectId})`);
  return 0;
}

/**
 * `sigil users sessions revoke USERNAME [--tenant T]`: ends every live session of a config-file or
 * stored user. The back-channel logout tokens for the sessions' clients are queued with each
 * ending (OIDC Back-Channel Logout 1.0); running nodes send them.
 */
async function revokeSessions(cfg: ResolvedConfig, store: Store, username: string, tenant: string | null): Promise<number> {
  const lower = username.toLowerCase();
  const inConfig = cfg.users.filter((u) => u.username.toLowerCase() === lower && (tenant === null || (u.tenant ?? null) === tenant));
  const subjectId = inConfig.length === 1 ? inConfig[0]?.subjectId : (await store.users.findUserByUsername(username, tenant))?.subjectId;
  if (subjectId === undefined) return failure(`no user "${username}"`);
  const clients = new ClientRegistry(cfg.clients);
  clients.setStoredClients(await loadStoredClients(store.clients, pino({ level: 'silent' })));
  const ended = await new LogoutService(store.logout, clients, cfg.backChannelLogout.retrySeconds).endSessionsOf(subjectId);
  console.log(`ended ${ended} session${ended === 1 ? '' : 's'} of ${username}; running nodes send the back-channel logout notifications`);
  return 0;
}

function warnIfConfigUser(cfg: ResolvedConfig, username: string, subjectId: string): void {
  const clash = cfg.users.find((u) => u.subjectId === subjectId || u.username.toLowerCase() === username.toLowerCase());
  if (clash) console.warn(`sigil: warning: the config file has a user "${clash.username}" (${clash.subjectId}); config users win`);
}

async function readPassword(flags: AdminFlags): Promise<string | undefined> {
  if (flags.password !== undefined) return flags.password;
  if (!flags['password-stdin']) return undefined;
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.replace(/\r?\n$/, '');
}

function parseJsonObject(text: string, what: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  console.error(`sigil: ${what} must be a JSON object`);
  return undefined;
}

function usage(message: string): number {
  console.error(`sigil: ${message}`);
  return 2;
}

function failure(message: string): number {
  console.error(`sigil: ${message}`);
  return 1;
}
