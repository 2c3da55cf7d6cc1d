/**
 * OpenTelemetry tracing, configured only by the standard `OTEL_*` variables:
 * a real OTLP/HTTP receiver (a small node server in a process of its own on loopback, taking
 * `POST /v1/traces` with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) receives the spans of a token
 * request made over HTTP: the request's span, named after its route, with the client and grant
 * type and no secret or token, the store's span under it, and the trace id in the audit line.
 * No secret of any flow driven over HTTP (client secrets in Basic and in the body, passwords,
 * codes, code verifiers, access, refresh and identity tokens, initial and registration access
 * tokens, a reset link's token, cookies) shows anywhere in what the receiver got, resource
 * included; nor the database password of `sigil start --storage postgres://…` (a process of its
 * own, whose pg spans are checked too). Without the variables nothing of OpenTelemetry is loaded.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserAdmin } from '../../src/admin/users.js';
import { tracingRequested } from '../../src/telemetry/tracing.js';
import {
  Browser,
  CB,
  codeParams,
  idTokensInSession,
  input,
  isConsentPage,
  isLoginPage,
  pkce,
  readResponse,
  type Step,
  webLike,
} from '../authorize-helpers.js';
import { freePort } from '../e2e/ports.js';
import {
  basic,
  dropSchema,
  form,
  POSTGRES_URL,
  type ServerProcess,
  sleep,
  startProcess,
  startSigil,
  testConfig,
  type TestSigil,
  uniqueSchema,
} from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';
import { registrationConfig } from '../registration-helpers.js';
import { linkIn, SmtpReceiver } from '../smtp-receiver.js';

/** The receiver: keeps every OTLP/JSON body posted to /v1/traces, hands them out at GET /received. */
const RECEIVER = `
import { createServer } from 'node:http';
const received = [];
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/received') return res.end(JSON.stringify(received));
  if (req.method !== 'POST' || req.url !== '/v1/traces') { res.statusCode = 404; return res.end(); }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    received.push({ contentType: req.headers['content-type'], body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: { key: string; value: { stringValue?: string; intValue?: number | string } }[];
}

/** The spans of every body received, flattened. */
function spansOf(bodies: { body: { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] } }[]): OtlpSpan[] {
  return bodies.flatMap((b) =>
    (b.body.resourceSpans ?? []).flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? [])),
  );
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};

/** Polls the receiver (up to 5 s) until `done` accepts the spans received so far. */
async function waitForSpans(done: (spans: OtlpSpan[]) => boolean): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const bodies = (await (await fetch(`${receiverOrigin}/received`)).json()) as Parameters<typeof spansOf>[0];
    if (done(spansOf(bodies))) return;
    await sleep(50);
  }
}

let receiverOrigin: string;

/** Everything the receiver holds, as the text it was exported as (resource, spans, events, attributes). */
async function receivedText(): Promise<string> {
  return (await fetch(`${receiverOrigin}/received`)).text();
}

/**
 * The forms under which a secret could show in an export: itself, URL-encoded (a query or form
 * value) and base64 (a Basic header's credentials are `base64(id:secret)`).
 */
function leakForms(secret: string): string[] {
  const json = (s: string) => JSON.stringify(s).slice(1, -1);
  return [...new Set([secret, encodeURIComponent(secret), json(secret)])];
}

/** The secrets of `secrets` found in `text` (none expected), each with the first 80 characters around it. */
function leaks(text: string, secrets: Iterable<string>): string[] {
  const found: string[] = [];
  for (const secret of secrets)
    for (const shape of leakForms(secret)) {
      const at = text.indexOf(shape);
      if (at >= 0) found.push(`${secret.slice(0, 12)}… in …${text.slice(Math.max(0, at - 60), at + 20)}…`);
    }
  return found;
}

/**
 * The cookie-keeping browser of `authorize-helpers.ts` over real HTTP (one connection per request),
 * so that each step passes through the HTTP instrumentation as a browser's request does.
 */
class HttpBrowser extends Browser {
  constructor(
    sigil: TestSigil,
    private readonly origin: string,
  ) {
    super(sigil);
  }

  override async send(
    method: string,
    url: string,
    payload?: string,
    extra: Record<string, string> = {},
  ): Promise<Step> {
    const path = url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(`${this.origin}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        connection: 'close',
        ...(cookie ? { cookie } : {}),
        ...(payload !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...extra,
      },
      ...(payload !== undefined ? { body: payload } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((p) => p.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const gone =
        value === '' ||
        attributes.some(
          (a) => /^max-age=(0|-)/i.test(a) || (/^expires=/i.test(a) && Date.parse(a.slice(8)) < Date.now()),
        );
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const body = await res.text();
    const location = res.headers.get('location');
    const headers = Object.fromEntries(res.headers);
    return { status: res.status, body, headers, res: undefined as never, ...(location !== null ? { location } : {}) };
  }
}

/** The variables the test sets (this file's worker process only), as an operator would. */
const otelEnvironment = () => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiverOrigin,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: 'sigil-test',
  OTEL_METRICS_EXPORTER: 'none',
  OTEL_LOGS_EXPORTER: 'none',
  OTEL_BSP_SCHEDULE_DELAY: '50',
});

describe('tracing with OTEL_* set', () => {
  let receiver: ChildProcess;
  let sigil: TestSigil;
  let logoutReceiver: LogoutReceiver;
  let smtp: SmtpReceiver;
  const PASSWORD = 'harbour-violet-19';
  /** A key of the client's own in the query of its back-channel logout URI. */
  const HOOK_KEY = 'bc-hook-key-0a9f3e';
  const logLines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    receiver = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [port] = (await once(receiver.stdout!, 'data')) as [Buffer];
    receiverOrigin = `http://127.0.0.1:${port.toString().trim()}`;
    Object.assign(process.env, otelEnvironment());
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
            logLines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      }),
    );
    logoutReceiver = await LogoutReceiver.start();
    smtp = await new SmtpReceiver().start();
    const registration = registrationConfig();
    sigil = await startSigil(
      {
        clients: [
          ...registration.clients,
          webLike('bc', { backChannelLogoutUri: `${logoutReceiver.url}/bc?hook_key=${HOOK_KEY}` }),
          webLike('web'),
          {
            clientId: 'scim-bot',
            clientSecrets: ['scim-bot-secret'],
            allowedGrantTypes: ['client_credentials'],
            allowedScopes: ['scim'],
          },
        ],
        registration: registration.registration,
        email: { smtpUrl: smtp.url, from: 'id@acme.example' },
      },
      { logger },
    );
    await new UserAdmin(sigil.context.store, sigil.context.config).create({
      username: 'victim',
      password: PASSWORD,
      email: 'victim@example.org',
      emailVerified: true,
    });
    await sigil.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await sigil?.close();
    await logoutReceiver?.close();
    await smtp?.close();
    receiver?.kill();
    for (const name of Object.keys(otelEnvironment())) delete process.env[name];
  });

  it('exports the token request span, with client and grant type, and the store span under it', async () => {
    const { port } = sigil.app.server.address() as { port: number };
    const res = await fetch(`http://127.0.0.1:${port}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m-ref', 'm2m-secret') },
      body: form({ grant_type: 'client_credentials', scope: 'api1' }),
    });
    expect(res.status).toBe(200);
    const { access_token: accessToken } = (await res.json()) as { access_token: string };

    let spans: OtlpSpan[] = [];
    let request: OtlpSpan | undefined;
    let store: OtlpSpan | undefined;
    await waitForSpans((received) => {
      spans = received;
      request = spans.find((s) => s.name === 'POST /connect/token');
      store = request && spans.find((s) => s.name === 'store.grants.put' && s.traceId === request!.traceId);
      return Boolean(request && store);
    });
    expect(request, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(attribute(request!, 'http.route')).toBe('/connect/token');
    expect(attribute(request!, 'sigil.client_id')).toBe('m2m-ref');
    expect(attribute(request!, 'sigil.grant_type')).toBe('client_credentials');
    expect(store, JSON.stringify(spans.map((s) => [s.name, s.traceId, s.parentSpanId]))).toBeDefined();
    expect(store!.parentSpanId).toBe(request!.spanId);
    // Never a token or a secret in any span.
    const exported = JSON.stringify(spans);
    expect(exported).not.toContain(accessToken);
    expect(exported).not.toContain('m2m-secret');
    expect(exported).not.toContain(basic('m2m-ref', 'm2m-secret'));

    const audit = logLines.find((l) => (l.event as { name?: string } | undefined)?.name === 'token_issued');
    expect((audit?.event as { traceId?: string } | undefined)?.traceId).toBe(request!.traceId);
  });

  it('gives each preToken hook call a span under the token request', async () => {
    const hooked = await startSigil({}, { hooks: { preToken: () => ({ accessToken: { claims: { traced: true } } }) } });
    try {
      await hooked.app.listen({ host: '127.0.0.1', port: 0 });
      const { port } = hooked.app.server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('m2m', 'm2m-secret') },
        body: form({ grant_type: 'client_credentials', scope: 'api2' }),
      });
      expect(res.status).toBe(200);
      let request: OtlpSpan | undefined;
      let hook: OtlpSpan | undefined;
      await waitForSpans((spans) => {
        hook = spans.find((s) => s.name === 'hook.preToken');
        request = hook && spans.find((s) => s.spanId === hook!.parentSpanId);
        return Boolean(request);
      });
      expect(request?.name).toBe('POST /connect/token');
    } finally {
      await hooked.close();
    }
  });

  it('records no query value and no caller address of a request', async () => {
    const { port } = sigil.app.server.address() as { port: number };
    const hint = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJzZWNyZXQtaGludCJ9.';
    const res = await fetch(`http://127.0.0.1:${port}/connect/endsession?id_token_hint=${hint}&state=private-state`, {
      redirect: 'manual',
    });
    expect(res.status).toBeLessThan(500);
    let span: OtlpSpan | undefined;
    await waitForSpans((spans) => {
      span = spans.find((s) => s.name === 'GET /connect/endsession');
      return span !== undefined;
    });
    expect(span).toBeDefined();
    expect(attribute(span!, 'url.query')).toBe('id_token_hint=REDACTED&state=REDACTED');
    const exported = JSON.stringify(span);
    expect(exported).not.toContain(hint);
    expect(exported).not.toContain('private-state');
    for (const key of ['client.address', 'network.peer.address', 'network.peer.port'])
      expect(attribute(span!, key)).toBeUndefined();
  });

  it('exports a span per back-channel logout delivery, with the logout store calls under it', async () => {
    const b = new Browser(sigil, '10.8.0.1');
    const { idTokens } = await idTokensInSession(sigil, b, ['bc']);
    await b.get(`/connect/endsession?${new URLSearchParams({ id_token_hint: idTokens[0]! })}`);
    await logoutReceiver.waitFor(() => logoutReceiver.delivered.length, 1);
    let spans: OtlpSpan[] = [];
    let delivery: OtlpSpan | undefined;
    await waitForSpans((received) => {
      spans = received;
      delivery = spans.find((s) => s.name === 'logout.delivery.attempt');
      return (
        delivery !== undefined &&
        spans.some((s) => s.parentSpanId === delivery!.spanId && s.name === 'store.logout.finishDelivery')
      );
    });
    expect(delivery, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(
      spans.find((s) => s.name === 'store.logout.finishDelivery' && s.parentSpanId === delivery!.spanId),
    ).toBeDefined();
    // Nor the key in the query of the client's logout URI.
    expect(await receivedText()).not.toContain(HOOK_KEY);
  });
  it('exports no secret, password, code, token, link token, cookie or Authorization header of any flow over HTTP', async () => {
    const { port } = sigil.app.server.address() as { port: number };
    const origin = `http://127.0.0.1:${port}`;
    const secrets = new Set<string>([
      PASSWORD,
      'm2m-secret',
      'ropc-secret',
      'web-secret',
      'api1-secret',
      'registrar-secret',
      'scim-bot-secret',
    ]);
    /** Every Basic header is a secret too, and so is its base64 part alone. */
    const basicOf = (id: string, secret: string) => {
      const header = basic(id, secret);
      secrets.add(header);
      secrets.add(header.slice('Basic '.length));
      return header;
    };
    const call = async (
      path: string,
      init: { method?: string; headers?: Record<string, string>; body?: string } = {},
    ) => {
      const res = await fetch(`${origin}${path}`, {
        redirect: 'manual',
        ...init,
        headers: { connection: 'close', ...init.headers },
      });
      const text = await res.text();
      return { status: res.status, text, json: () => JSON.parse(text) as Record<string, string> };
    };
    const token = (params: Record<string, string>, authorization?: string) =>
      call('/connect/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) },
        body: form(params),
      });
    const keep = (body: Record<string, string>) => {
      for (const name of [
        'access_token',
        'refresh_token',
        'id_token',
        'client_secret',
        'registration_access_token',
        'device_code',
        'user_code',
      ])
        if (typeof body[name] === 'string') secrets.add(body[name]);
      return body;
    };

    // client_credentials: client_secret_basic, then client_secret_post.
    const m2m = await token({ grant_type: 'client_credentials', scope: 'api1' }, basicOf('m2m', 'm2m-secret'));
    expect(m2m.status, m2m.text).toBe(200);
    keep(m2m.json());
    const posted = await token({
      grant_type: 'client_credentials',
      scope: 'api1',
      client_id: 'm2m',
      client_secret: 'm2m-secret',
    });
    expect(posted.status, posted.text).toBe(200);
    keep(posted.json());

    // Password grant (a wrong password first), refresh, introspection, userinfo, revocation.
    const wrong = 'wrong-horse-battery-7';
    secrets.add(wrong);
    expect(
      (
        await token(
          { grant_type: 'password', username: 'victim', password: wrong, scope: 'openid api1' },
          basicOf('ropc', 'ropc-secret'),
        )
      ).status,
    ).toBe(400);
    const password = await token(
      { grant_type: 'password', username: 'victim', password: PASSWORD, scope: 'openid api1 offline_access' },
      basicOf('ropc', 'ropc-secret'),
    );
    expect(password.status, password.text).toBe(200);
    const grant = keep(password.json());
    const refreshed = keep(
      (
        await token(
          { grant_type: 'refresh_token', refresh_token: grant.refresh_token! },
          basicOf('ropc', 'ropc-secret'),
        )
      ).json(),
    );
    expect(refreshed.access_token).toBeDefined();
    const introspection = await call('/connect/introspect', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicOf('api1', 'api1-secret') },
      body: form({ token: refreshed.access_token! }),
    });
    expect(introspection.json().active).toBe(true);
    const info = await call('/connect/userinfo', { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(info.status, info.text).toBe(200);
    const revocation = await call('/connect/revocation', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicOf('ropc', 'ropc-secret') },
      body: form({ token: refreshed.refresh_token!, token_type_hint: 'refresh_token' }),
    });
    expect(revocation.status).toBe(200);

    // Authorization code with PKCE through the login and consent pages, its redemption, then
    // logout with the identity token as hint.
    const b = new HttpBrowser(sigil, origin);
    const { verifier, challenge } = pkce();
    secrets.add(verifier);
    let step = await b.follow(await b.get(`/connect/authorize?${new URLSearchParams(codeParams(challenge))}`));
    expect(isLoginPage(step), step.body).toBe(true);
    secrets.add(input(step.body, 'csrf_token'));
    step = await b.follow(await b.submitLogin(step, 'victim', PASSWORD));
    if (isConsentPage(step)) step = await b.consent(step, 'yes');
    const code = readResponse(step).params.get('code')!;
    expect(code).toBeTruthy();
    secrets.add(code);
    for (const value of b.cookies.values()) secrets.add(value);
    const redeemed = await token(
      { grant_type: 'authorization_code', code, redirect_uri: CB, code_verifier: verifier },
      basicOf('web', 'web-secret'),
    );
    expect(redeemed.status, redeemed.text).toBe(200);
    const web = keep(redeemed.json());
    const ended = await b.get(
      `/connect/endsession?${new URLSearchParams({ id_token_hint: web.id_token!, post_logout_redirect_uri: 'https://rp.example/bye' })}`,
    );
    expect(ended.status).toBeLessThan(500);

    // Dynamic registration with an initial access token, then a read with the registration access token.
    const initial = keep(
      (
        await token(
          { grant_type: 'client_credentials', scope: 'sigil:register' },
          basicOf('registrar', 'registrar-secret'),
        )
      ).json(),
    );
    const registered = await call('/connect/register', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${initial.access_token}` },
      body: JSON.stringify({ redirect_uris: [CB], client_name: 'RP' }),
    });
    expect(registered.status, registered.text).toBe(201);
    const client = keep(registered.json());
    const read = await call(new URL(client.registration_client_uri!).pathname, {
      headers: { authorization: `Bearer ${client.registration_access_token}` },
    });
    expect(read.status, read.text).toBe(200);
    keep(read.json());
    basicOf(client.client_id!, client.client_secret!);

    // A password reset: the link from the real mail, opened (its token in the query), then used.
    const mailer = new HttpBrowser(sigil, origin);
    const forgot = await mailer.get('/account/forgot');
    expect(
      (await mailer.post('/account/forgot', { csrf_token: input(forgot.body, 'csrf_token'), identifier: 'victim' }))
        .status,
    ).toBe(200);
    const link = linkIn(await smtp.waitFor(1), '/account/reset');
    const linkToken = new URL(link).searchParams.get('token')!;
    secrets.add(linkToken);
    const resetPage = await mailer.get(new URL(link).pathname + new URL(link).search);
    expect(resetPage.status, resetPage.body).toBe(200);
    const newPassword = 'lantern-quartz-88-orbit';
    secrets.add(newPassword);
    const reset = await mailer.post('/account/reset', {
      csrf_token: input(resetPage.body, 'csrf_token'),
      token: linkToken,
      password: newPassword,
      confirm_password: newPassword,
    });
    expect(reset.status, reset.body).toBe(200);
    for (const value of mailer.cookies.values()) secrets.add(value);

    // SCIM with a Bearer token.
    const scim = keep(
      (await token({ grant_type: 'client_credentials', scope: 'scim' }, basicOf('scim-bot', 'scim-bot-secret'))).json(),
    );
    const users = await call('/scim/v2/Users?filter=userName%20eq%20%22victim%22', {
      headers: { authorization: `Bearer ${scim.access_token}` },
    });
    expect(users.status, users.text).toBe(200);

    // The last request: once its span is received, every earlier one (ended before it) is too.
    expect((await call('/.well-known/openid-configuration?last=1')).status).toBe(200);
    await waitForSpans((spans) =>
      spans.some(
        (s) => s.name === 'GET /.well-known/openid-configuration' && attribute(s, 'url.query') === 'last=REDACTED',
      ),
    );
    const text = await receivedText();
    for (const name of [
      'POST /connect/token',
      'GET /account/reset',
      'POST /connect/register',
      'GET /connect/userinfo',
      'POST /connect/revocation',
    ])
      expect(text).toContain(`"${name}"`);
    expect(leaks(text, secrets)).toEqual([]);
  });
  it('exports neither the database password of `sigil start --storage` nor SQL values, on PostgreSQL', async () => {
    const schema = uniqueSchema('sigil_tracing');
    // Trust authentication: the server takes any password, so the one on the command line is only ever a
    // secret to keep.
    const databasePassword = 'pg-password-on-the-command-line-41';
    const storage = `${POSTGRES_URL.replace('postgres://postgres@', `postgres://postgres:${databasePassword}@`)}?schema=${schema}`;
    let server: ServerProcess | undefined;
    try {
      const erin = { subjectId: '9', username: 'erin', password: 'erin-long-password-53', claims: {} };
      server = await startProcess(testConfig({ logLevel: 'warn', users: [erin] }), await freePort(), {
        args: ['--storage', storage],
        env: { OTEL_SERVICE_NAME: 'sigil-pg-process' },
      });
      const secrets = new Set([databasePassword, 'ropc-secret', erin.password]);
      const token = async (params: Record<string, string>) => {
        const res = await fetch(`${server!.url}/connect/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: basic('ropc', 'ropc-secret'),
            connection: 'close',
          },
          body: form(params),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as Record<string, string>;
        for (const name of ['access_token', 'refresh_token', 'id_token']) if (body[name]) secrets.add(body[name]);
        return body;
      };
      const first = await token({
        grant_type: 'password',
        username: 'erin',
        password: erin.password,
        scope: 'openid api1 offline_access',
      });
      const second = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token! });
      const info = await fetch(`${server.url}/connect/userinfo`, {
        headers: { authorization: `Bearer ${second.access_token}`, connection: 'close' },
      });
      expect(info.status).toBe(200);
      secrets.add(basic('ropc', 'ropc-secret').slice('Basic '.length));
      // The refresh token's stored handle is looked up by value: a statement with parameters, never the value.
      await waitForSpans(
        (spans) =>
          spans.some(
            (s) =>
              s.name === 'GET /connect/userinfo' &&
              attribute(s, 'http.route') === '/connect/userinfo' &&
              spans.some((p) => p.traceId === s.traceId && p.name.startsWith('pg.')),
          ) && spans.some((s) => s.name.startsWith('pg.query')),
      );
      const text = await receivedText();
      expect(text).toContain('sigil-pg-process');
      expect(text).toContain('db.query.text');
      expect(leaks(text, secrets)).toEqual([]);
    } finally {
      await server?.stop();
      await dropSchema(schema);
    }
  });
});

describe('tracing without OTEL_* variables', () => {
  it('is off: tracingRequested is false for an empty environment and for an exporter set to none', () => {
    expect(tracingRequested({})).toBe(false);
    expect(
      tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }),
    ).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(
      false,
    );
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
  });
});
