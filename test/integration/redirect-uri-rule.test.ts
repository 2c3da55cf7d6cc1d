/**
 * One redirect URI rule on every management path, over HTTP on a real SQLite store: /admin/v1
 * POST and PATCH of a client with a `javascript:`, `data:`, `vbscript:`, `file:`, wildcard,
 * fragment, user-info or non-loopback http URI as `redirectUris` or `postLogoutRedirectUris` is a
 * 422 naming the field, and nothing is stored; the console's client forms refuse the same (signed
 * in over HTTP as an admin with a second factor); `allowHttpRedirectUris` lets a development
 * client use http on any host and nothing else. A client stored before the rule that breaks it
 * is not loaded (a warning names it and the field), so Sigil never redirects to its URIs.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizeUrl, Browser, input, pkce } from '../authorize-helpers.js';
import { clientTokens, startSigil, testConfig, type TestSigil } from '../helpers.js';
import { enrollTotp, isMfaPage, submitCode, totpCode } from '../mfa-helpers.js';

/** Refused for every client, whatever it is allowed. */
const BAD = [
  'javascript:alert(1)',
  'JAVASCRIPT:alert(1)',
  'java\tscript:alert(1)',
  ' javascript:alert(1)',
  'data:text/html,<script>alert(1)</script>',
  'vbscript:msgbox(1)',
  'file:///etc/passwd',
  'https://evil.example/*',
  'https://rp.example/cb#frag',
  'https://user@rp.example/cb',
];
/** Refused unless the client sets allowHttpRedirectUris. */
const PLAIN_HTTP = ['http://evil.example/cb', 'http://localhost.evil.example/cb', 'http://127.0.0.1.nip.io/cb'];

let sigil: TestSigil;
let admin: string;

beforeAll(async () => {
  const base = testConfig();
  sigil = await startSigil({
    // alice has the role "admin": the console's admin here.
    admin: { userRole: 'admin' },
    clients: [
      ...base.clients!,
      {
        clientId: 'automation',
        clientSecrets: ['automation-secret'],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['sigil:admin'],
      },
    ],
  });
  admin = (await clientTokens(sigil, 'sigil:admin', ['automation', 'automation-secret'])).access_token;
});
afterAll(async () => sigil?.close());

function call(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown, headers: Record<string, string> = {}) {
  return sigil.app.inject({
    method,
    url: `/admin/v1${path}`,
    headers: {
      authorization: `Bearer ${admin}`,
      ...(body !== undefined
        ? { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }
        : {}),
      ...headers,
    },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
}

const webClient = (clientId: string, extra: Record<string, unknown> = {}) => ({
  clientId,
  requireClientSecret: false,
  allowedGrantTypes: ['authorization_code'],
  allowedScopes: ['openid'],
  redirectUris: ['https://rp.example/cb'],
  postLogoutRedirectUris: ['https://rp.example/bye'],
  ...extra,
});

describe('/admin/v1/clients', () => {
  it('refuses a bad redirect or post-logout redirect URI on create with 422 naming the field, storing nothing', async () => {
    for (const [i, uri] of [...BAD, ...PLAIN_HTTP].entries()) {
      for (const field of ['redirectUris', 'postLogoutRedirectUris']) {
        const id = `bad-${field}-${i}`;
        const res = await call('POST', '/clients', webClient(id, { [field]: ['https://rp.example/ok', uri] }));
        expect(res.statusCode, `${field} ${JSON.stringify(uri)}: ${res.body}`).toBe(422);
        expect(res.headers['content-type']).toContain('application/problem+json');
        expect(res.json().errors).toContainEqual(expect.objectContaining({ path: `${field}.1` }));
        expect((await call('GET', `/clients/${id}`)).statusCode).toBe(404);
        expect(await sigil.context.store.clients.getClient(id)).toBeUndefined();
      }
    }
  });

  it('refuses a merge patch that brings in a bad URI with 422 naming the field, the stored client unchanged', async () => {
    const created = await call('POST', '/clients', webClient('patched-rp'));
    expect(created.statusCode, created.body).toBe(201);
    const etag = created.headers.etag as string;
    for (const uri of [...BAD, ...PLAIN_HTTP]) {
      for (const field of ['redirectUris', 'postLogoutRedirectUris']) {
        const res = await call('PATCH', '/clients/patched-rp', { [field]: [uri] }, { 'if-match': etag });
        expect(res.statusCode, `${field} ${JSON.stringify(uri)}: ${res.body}`).toBe(422);
        expect(res.json().errors).toContainEqual(expect.objectContaining({ path: `${field}.0` }));
      }
    }
    const read = await call('GET', '/clients/patched-rp');
    expect(read.headers.etag).toBe(etag);
    expect(read.json().client).toMatchObject({
      redirectUris: ['https://rp.example/cb'],
      postLogoutRedirectUris: ['https://rp.example/bye'],
    });
  });

  it('takes http on any host for a client marked allowHttpRedirectUris, and nothing else it would refuse', async () => {
    const dev = await call(
      'POST',
      '/clients',
      webClient('dev-rp', {
        allowHttpRedirectUris: true,
        redirectUris: PLAIN_HTTP,
        postLogoutRedirectUris: ['http://dev.example/bye'],
      }),
    );
    expect(dev.statusCode, dev.body).toBe(201);
    expect(dev.json().client).toMatchObject({ allowHttpRedirectUris: true, redirectUris: PLAIN_HTTP });
    for (const uri of BAD) {
      const res = await call(
        'PATCH',
        '/clients/dev-rp',
        { redirectUris: [uri] },
        { 'if-match': dev.headers.etag as string },
      );
      expect(res.statusCode, JSON.stringify(uri)).toBe(422);
    }
    // Switching the flag off while an http URI is registered is refused too.
    const off = await call(
      'PATCH',
      '/clients/dev-rp',
      { allowHttpRedirectUris: false },
      { 'if-match': dev.headers.etag as string },
    );
    expect(off.statusCode).toBe(422);
    expect(off.json().errors).toContainEqual(expect.objectContaining({ path: 'redirectUris.0' }));
    // A native app's private-use scheme in reverse domain name form (RFC 8252 §7.1) is fine.
    const native = await call(
      'POST',
      '/clients',
      webClient('native-app', { redirectUris: ['com.example.app:/callback', 'http://127.0.0.1/cb'] }),
    );
    expect(native.statusCode, native.body).toBe(201);
  });
});

describe("the console's client forms", () => {
  let b: Browser;
  beforeAll(async () => {
    // Signs in to the console as alice over HTTP: password and an authenticator app enrolled, then
    // the console client's sign-in (it requires a second factor) through to its callback.
    b = new Browser(sigil);
    await b.signIn('alice');
    const { secret } = await enrollTotp(b);
    let step = await b.get('/admin/clients');
    for (let i = 0; i < 10 && step.status === 303 && step.location !== undefined && !isMfaPage(step); i++)
      step = await b.get(step.location);
    // Enrolling proved the second factor in this session already; otherwise the code is asked for.
    if (isMfaPage(step)) step = await submitCode(b, step, totpCode(secret, 1));
    for (let i = 0; i < 10 && step.status === 303 && step.location !== undefined; i++)
      step = await b.get(step.location);
    expect(b.cookies.has('sigil.console')).toBe(true);
  });

  it('refuses a new client with a bad redirect URI, naming the field, storing nothing', async () => {
    for (const [i, uri] of [...BAD.filter((u) => u.trim() === u), ...PLAIN_HTTP].entries()) {
      const page = await b.get('/admin/clients/new');
      expect(page.status, page.body).toBe(200);
      const id = `console-bad-${i}`;
      const res = await b.post('/admin/clients/new', {
        csrf_token: input(page.body, 'csrf_token'),
        clientId: id,
        public: 'yes',
        allowedGrantTypes: 'authorization_code',
        redirectUris: `https://rp.example/ok\n${uri}`,
        allowedScopes: 'openid',
      });
      expect(res.status, `${JSON.stringify(uri)}: ${res.body}`).toBe(400);
      expect(res.body).toContain('redirectUris.1');
      expect(await sigil.context.store.clients.getClient(id)).toBeUndefined();
    }
  });

  it("refuses changing a client's redirect URIs to a bad one, the stored client unchanged", async () => {
    expect((await call('POST', '/clients', webClient('console-rp'))).statusCode).toBe(201);
    for (const uri of ['javascript:alert(1)', 'https://evil.example/*', 'http://evil.example/cb']) {
      const page = await b.get('/admin/clients/console-rp');
      expect(page.status, page.body).toBe(200);
      const res = await b.post('/admin/clients/console-rp', {
        csrf_token: input(page.body, 'csrf_token'),
        etag: input(page.body, 'etag'),
        allowedGrantTypes: 'authorization_code',
        redirectUris: uri,
        allowedScopes: 'openid',
      });
      expect(res.status, `${uri}: ${res.body}`).toBe(400);
      expect(res.body).toContain('redirectUris.0');
    }
    expect((await call('GET', '/clients/console-rp')).json().client.redirectUris).toEqual(['https://rp.example/cb']);
  });
});

describe('a stored client that breaks the rule (saved before it existed)', () => {
  it('is not loaded: a warning names the client and the field, and the authorization endpoint does not know it', async () => {
    const lines: string[] = [];
    const logged = await startSigil(
      {},
      { logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }) },
    );
    try {
      // Written straight to the store, as a database from an earlier version may hold it.
      await logged.context.store.clients.saveClient(
        'legacy-rp',
        webClient('legacy-rp', { redirectUris: ['javascript:alert(document.cookie)'] }),
      );
      await logged.context.store.clients.saveClient('kept-rp', webClient('kept-rp'));
      await logged.context.management.reloadClients();
      expect(logged.context.clients.get('kept-rp')).toBeDefined();
      expect(logged.context.clients.get('legacy-rp')).toBeUndefined();
      const warning = lines
        .map((l) => JSON.parse(l) as { msg: string; clientId?: string; problems?: string[] })
        .find((l) => l.clientId === 'legacy-rp');
      expect(warning).toMatchObject({
        msg: 'stored client ignored: invalid',
        problems: [expect.stringMatching(/^redirectUris\.0: the scheme javascript: is not allowed/)],
      });
      const { challenge } = pkce();
      const params = {
        response_type: 'code',
        client_id: 'legacy-rp',
        redirect_uri: 'javascript:alert(document.cookie)',
        scope: 'openid',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      };
      const res = await logged.app.inject({
        method: 'GET',
        url: authorizeUrl(params),
        headers: { accept: 'text/html' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.body).toContain('unknown client');
    } finally {
      await logged.close();
    }
  });
});
