import { createHash } from 'node:crypto';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { decodeJwt } from 'jose';
import { Kysely, type MigrationProvider, Migrator, SqliteDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InjectBrowser } from '../browser-helpers.js';
import { freePort } from '../e2e/ports.js';
import { hash } from '@node-rs/argon2';
import { migrationProvider } from '../../src/stores/migrations.js';
import { openStore } from '../../src/stores/sql.js';
import { externalLinkKey } from '../../src/stores/types.js';
import { pino } from 'pino';
import { ResourceAdmin } from '../../src/admin/resources.js';
import { UpstreamProviders } from '../../src/federation/upstream.js';
import { Resources } from '../../src/resources/scopes.js';
import { basic, clientTokens, form, startSigil, tempDir, testConfig } from '../helpers.js';
import { enrollTotp, submitCode, totpCode } from '../mfa-helpers.js';

const verifier = 'v'.repeat(43);
const challenge = createHash('sha256').update(verifier).digest('base64url');
const DOWN = 'http://127.0.0.1:5999';
const LONG_PREFIX = 'u'.repeat(230);
/** The clients of the downstream with a data key: an admin API caller and the relying party. */
const sealedClients = [
  {
    clientId: 'automation',
    clientSecrets: ['automation-secret'],
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['sigil:admin'],
  },
  {
    clientId: 'web',
    clientSecrets: ['web-secret'],
    allowedGrantTypes: ['authorization_code'],
    allowedScopes: ['openid', 'profile', 'email'],
    redirectUris: ['https://rp.example/cb'],
  },
];

/**
 * Two providers: "corp" (listening on a real socket, as openid-client needs for discovery and the
 * token request) is the upstream identity provider of "down" (driven through inject).
 */
describe('upstream identity provider through acr_values=idp:corp', () => {
  let up: Awaited<ReturnType<typeof startSigil>>;
  let down: Awaited<ReturnType<typeof startSigil>>;
  /** A downstream with a data key (`SIGIL_DATA_KEY`) whose "corp" is created through /admin/v1. */
  let sealedDown: Awaited<ReturnType<typeof startSigil>>;
  let upIssuer: string;

  beforeAll(async () => {
    const port = await freePort();
    upIssuer = `http://127.0.0.1:${port}`;
    up = await startSigil({
      issuer: upIssuer,
      // Two upstream users whose subjects share their first 230 characters (OIDC Core §2 allows 255).
      users: [
        ...(testConfig().users ?? []),
        { subjectId: 'mfa-1', username: 'erin', password: 'erin' },
        ...(['a', 'b'] as const).map((c) => ({
          subjectId: LONG_PREFIX + c.repeat(10),
          username: `long${c}`,
          password: `long${c}`,
        })),
      ],
      clients: [
        {
          clientId: 'sigil-down',
          clientSecrets: ['down-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'email'],
          redirectUris: [`${DOWN}/federation/corp/callback`],
        },
      ],
    });
    await up.app.listen({ port, host: '127.0.0.1' });
    down = await startSigil({
      identityProviders: [
        {
          name: 'corp',
          displayName: 'Corp SSO',
          authority: upIssuer,
          clientId: 'sigil-down',
          clientSecret: 'down-secret',
          scope: 'openid profile email',
        },
      ],
      clients: [
        {
          clientId: 'web',
          clientSecrets: ['web-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid', 'profile', 'email'],
          redirectUris: ['https://rp.example/cb'],
        },
        {
          clientId: 'restricted',
          clientSecrets: ['r-secret'],
          allowedGrantTypes: ['authorization_code'],
          allowedScopes: ['openid'],
          redirectUris: ['https://rp.example/cb'],
          identityProviderRestrictions: ['other'],
        },
      ],
    });
    sealedDown = await startSigil({ clients: sealedClients }, { dataKey: new Uint8Array(32).fill(9) });
  });
  afterAll(async () => {
    await sealedDown?.close();
    await down.close();
    await up.close();
  });

  const authorizeUrl = (clientId: string, acr: string, extra: Record<string, string> = {}) =>
    `/connect/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: 'https://rp.example/cb',
      response_type: 'code',
      scope: 'openid profile email',
      state: 's',
      nonce: 'n',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      acr_values: acr,
      ...extra,
    })}`;

  /** Signs `username` in at the upstream and returns the downstream's answer to the callback. */
  async function upstreamCallback(
    username: string,
    totpSecret?: string,
    extra: Record<string, string> = {},
    target = down,
  ) {
    const browserDown = new InjectBrowser(target.app);
    const browserUp = new InjectBrowser(up.app);
    const start = await browserDown.get(authorizeUrl('web', 'idp:corp', extra));
    expect(start.location).toMatch(/^\/federation\/corp\/login\?interaction=/);
    const toUpstream = await browserDown.get(start.location!);
    expect(toUpstream.status).toBe(303);
    expect(toUpstream.location!.startsWith(`${upIssuer}/connect/authorize?`)).toBe(true);
    const upLogin = await browserUp.get(toUpstream.location!);
    expect(upLogin.location).toMatch(/^\/account\/login/);
    let back = await browserUp.login(upLogin.location!, username, username);
    // A user with an authenticator app at the upstream gives a code there too.
    if (totpSecret) back = await submitCode(browserUp, back, totpCode(totpSecret, 1));
    expect(back.location!.startsWith(`${DOWN}/federation/corp/callback?`)).toBe(true);
    return { browserDown, callback: await browserDown.get(back.location!) };
  }

  /** Runs the whole flow for one upstream user; returns the downstream identity token's subject. */
  async function signInThroughCorp(
    username: string,
    totpSecret?: string,
    target = down,
  ): Promise<{ sub: string; email: unknown }> {
    const { browserDown, callback } = await upstreamCallback(username, totpSecret, {}, target);
    const done = await browserDown.follow(callback);
    expect(done.status).toBe(303);
    const code = new URL(done.location!).searchParams.get('code');
    expect(code).toBeTruthy();
    const res = await target.app.inject({
      method: 'POST',
      url: '/connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('web', 'web-secret') },
      payload: form({
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: 'https://rp.example/cb',
        code_verifier: verifier,
      }),
    });
    expect(res.statusCode).toBe(200);
    const idToken = decodeJwt(res.json().id_token as string);
    // An upstream sign-in that asserts MFA passes its amr on, and counts as MFA (mfa/factors.ts).
    expect(idToken.amr).toEqual(totpSecret ? ['pwd', 'otp', 'mfa'] : ['external']);
    expect(idToken.idp).toBe('corp');
    // acr_values was sent (idp:corp): the class achieved is a federated sign-in (users/acr.ts).
    expect(idToken.acr).toBe(totpSecret ? 'urn:sigil:acr:mfa' : 'urn:sigil:acr:federated');
    const info = await target.app.inject({
      method: 'GET',
      url: '/connect/userinfo',
      headers: { authorization: `Bearer ${res.json().access_token}` },
    });
    return { sub: String(idToken.sub), email: info.json().email };
  }

  it('goes straight to the upstream login, links the user to a stable local subject, maps claims', async () => {
    const first = await signInThroughCorp('alice');
    expect(first.sub).not.toBe('1');
    expect(first.email).toBe('alice@example.com');
    const second = await signInThroughCorp('alice');
    expect(second.sub).toBe(first.sub);
    const bob = await signInThroughCorp('bob');
    expect(bob.sub).not.toBe(first.sub);
  });

  it('a provider created through /admin/v1 with a data key stores its client secret sealed, and signs in with it', async () => {
    const changes: Record<string, unknown>[] = [];
    sealedDown.subscribe(
      (e) =>
        void (e.name === 'admin_changed' && e.action === 'identity_provider.update' && changes.push(e.changes ?? {})),
    );
    const token = (await clientTokens(sealedDown, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
    const admin = (method: 'POST' | 'PATCH', url: string, body: unknown, headers: Record<string, string> = {}) =>
      sealedDown.app.inject({
        method,
        url: `/admin/v1${url}`,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
          ...headers,
        },
        payload: JSON.stringify(body),
      });
    const created = await admin('POST', '/identity-providers', {
      name: 'corp',
      authority: upIssuer,
      clientId: 'sigil-down',
      clientSecret: 'down-secret',
      scope: 'openid profile email',
    });
    expect(created.statusCode, created.body).toBe(201);
    const row = async () => (await sealedDown.context.store.resources.get('identity_provider', 'corp'))!;
    expect(await row()).not.toContain('down-secret');
    expect(JSON.parse(await row())).toMatchObject({
      name: 'corp',
      sealedClientSecret: expect.stringMatching(/^[\w-]+\.\.[\w-]+\.[\w-]+\.[\w-]+$/),
    });
    expect(JSON.parse(await row())).not.toHaveProperty('clientSecret');
    expect((await signInThroughCorp('alice', undefined, sealedDown)).email).toBe('alice@example.com');
    // A patch of other settings keeps the sealed secret: sign-in still works.
    const patched = await admin(
      'PATCH',
      '/identity-providers/corp',
      { displayName: 'Corp' },
      { 'if-match': created.headers.etag as string },
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect(await row()).not.toContain('down-secret');
    expect((await signInThroughCorp('bob', undefined, sealedDown)).sub).toBeTruthy();
    // A new secret by PATCH is sealed too, and opened into the live provider.
    const wrong = await admin(
      'PATCH',
      '/identity-providers/corp',
      { clientSecret: 'not-the-secret' },
      { 'if-match': patched.headers.etag as string },
    );
    expect(wrong.statusCode, wrong.body).toBe(200);
    expect(await row()).not.toContain('not-the-secret');
    expect(sealedDown.context.upstream.get('corp')?.clientSecret).toBe('not-the-secret');
    // Read with another data key, or none (after a change of key that replaced the signing keys),
    // the sealed secret cannot be opened: the provider is left out with an error logged, never
    // used without its secret.
    for (const dataKey of [undefined, new Uint8Array(32).fill(8)]) {
      const cfg = sealedDown.context.config;
      const errors: unknown[] = [];
      const log = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line)) });
      const live = {
        resources: new Resources(cfg),
        upstream: new UpstreamProviders(cfg.identityProviders, cfg.issuer),
        apiSecrets: new Map(),
      };
      await new ResourceAdmin(sealedDown.context.store, {
        config: cfg,
        raw: testConfig({ clients: sealedClients }),
        log,
        live,
        ...(dataKey ? { dataKey } : {}),
      }).reload();
      expect(live.upstream.get('corp')).toBeUndefined();
      expect(errors).toEqual([
        expect.objectContaining({ name: 'corp', msg: expect.stringContaining('client secret cannot be opened') }),
      ]);
    }
    // Removed by `null`: nothing sealed is left. Each change names what changed, never a value of the secret.
    expect(
      (
        await admin(
          'PATCH',
          '/identity-providers/corp',
          { clientSecret: null },
          { 'if-match': wrong.headers.etag as string },
        )
      ).statusCode,
    ).toBe(200);
    expect(JSON.parse(await row())).not.toHaveProperty('sealedClientSecret');
    expect(sealedDown.context.upstream.get('corp')?.clientSecret).toBeUndefined();
    expect(changes).toEqual([{ displayName: 'Corp' }, { clientSecret: '(changed)' }, { clientSecret: '(changed)' }]);
  });

  it('carries the upstream amr through when the upstream asserts MFA', async () => {
    const enrolling = new InjectBrowser(up.app);
    await enrolling.signIn('erin');
    const { secret } = await enrollTotp(enrolling);
    expect((await signInThroughCorp('erin', secret)).sub).toBeTruthy();
  });

  it('links by the full pair (provider, sub): two upstream subjects sharing a long prefix are two local accounts', async () => {
    const a = await signInThroughCorp('longa');
    const b = await signInThroughCorp('longb');
    expect(a.sub).not.toBe(b.sub);
    expect((await signInThroughCorp('longa')).sub).toBe(a.sub);
    expect((await signInThroughCorp('longb')).sub).toBe(b.sub);
  });

  it("an upstream subject over 255 characters ends on the federation error page (in the request's ui_locales) and creates no user", async () => {
    await up.context.store.users.addUser({
      subjectId: 'w'.repeat(256),
      username: 'toolong',
      tenant: null,
      passwordHash: await hash('toolong'),
      claims: {},
      isActive: true,
    });
    const before = await down.context.store.users.listUsers();
    const { callback } = await upstreamCallback('toolong', undefined, { ui_locales: 'de' });
    expect(callback.status).toBe(502);
    expect(callback.body).toContain('<html lang="de">');
    expect(callback.location).toBeUndefined();
    expect(callback.body).toContain('temporarily_unavailable');
    expect(callback.body).toContain('invalid subject identifier');
    expect(await down.context.store.users.listUsers()).toEqual(before);
  });

  it('does not honour idp: for a client whose restrictions exclude it: the local login page is shown', async () => {
    const b = new InjectBrowser(down.app);
    const start = await b.get(
      authorizeUrl('restricted', 'idp:corp').replace('scope=openid+profile+email', 'scope=openid'),
    );
    expect(start.location).toMatch(/^\/account\/login\?interaction=/);
    const page = await b.get(start.location!);
    expect(page.body).not.toContain('/federation/corp/login');
  });

  it('lists the allowed providers on the login page and ignores unknown idp: values', async () => {
    const b = new InjectBrowser(down.app);
    const start = await b.get(authorizeUrl('web', 'idp:nope'));
    expect(start.location).toMatch(/^\/account\/login\?interaction=/);
    const page = await b.get(start.location!);
    expect(page.body).toContain('Corp SSO');
    expect(page.body).toContain('/federation/corp/login?interaction=');
  });

  it('a forged or replayed callback ends on the error page and creates nothing', async () => {
    const b = new InjectBrowser(down.app);
    const res = await b.get('/federation/corp/callback?code=x&state=forged');
    expect(res.status).toBe(502);
    expect(res.body).toContain('temporarily_unavailable');
    expect(res.location).toBeUndefined();
  });
});

describe('links made before the pair was stored (migration 0005_external_links)', () => {
  it('keeps an exact "<provider>:<sub>" link, and links no username that may have been cut at 100 characters', async () => {
    const { dir, cleanup } = tempDir();
    const file = join(dir, 'sigil.db');
    try {
      // The store as the previous release left it: the migrations before 0005 only, and users that
      // its federation made (no password, username "<provider>:<sub>", cut at 100 characters).
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(file) }) });
      const before0005: MigrationProvider = {
        getMigrations: async () =>
          Object.fromEntries(Object.entries(await migrationProvider.getMigrations()).filter(([name]) => name < '0005')),
      };
      expect((await new Migrator({ db, provider: before0005 }).migrateToLatest()).error).toBeUndefined();
      const addUser = (subjectId: string, username: string, passwordHash: string | null) =>
        sql`insert into users (subject_id, username, username_normalized, tenant, password_hash, claims, is_active, created_at)
          values (${subjectId}, ${username}, ${username.toLowerCase()}, '', ${passwordHash}, '{}', 1, 0)`.execute(db);
      await addUser('legacy-1', 'corp:1', null);
      await addUser('legacy-cut', `corp:${'u'.repeat(95)}`, null);
      await addUser('local-1', 'corp:admin', await hash('pw'));
      await db.destroy();

      const store = await openStore(`sqlite:${file}`);
      try {
        expect(await store.users.findExternalLink(externalLinkKey('corp', '1'))).toBe('legacy-1');
        expect(await store.users.findExternalLink(externalLinkKey('corp', 'u'.repeat(95)))).toBeUndefined();
        // A user with a password was made locally, not by federation.
        expect(await store.users.findExternalLink(externalLinkKey('corp', 'admin'))).toBeUndefined();
      } finally {
        await store.close();
      }
    } finally {
      cleanup();
    }
  });
});
