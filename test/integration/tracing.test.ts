/**
 * OpenTelemetry tracing (issue 26 item 3), configured only by the standard `OTEL_*` variables:
 * a real OTLP/HTTP receiver (a small node server in a process of its own on loopback, taking
 * `POST /v1/traces` with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) receives the spans of a token
 * request made over HTTP: the request's span, named after its route, with the client and grant
 * type and no secret or token, the store's span under it, and the trace id in the audit line.
 * Without the variables nothing of OpenTelemetry is loaded.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracingRequested } from '../../src/telemetry/tracing.js';
import { Browser, idTokensInSession, webLike } from '../authorize-helpers.js';
import { basic, form, sleep, startSigil, testConfig, type TestSigil } from '../helpers.js';
import { LogoutReceiver } from '../logout-receiver.js';

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
  return bodies.flatMap((b) => (b.body.resourceSpans ?? []).flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? [])));
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
  const logLines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    receiver = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [port] = (await once(receiver.stdout!, 'data')) as [Buffer];
    receiverOrigin = `http://127.0.0.1:${port.toString().trim()}`;
    Object.assign(process.env, otelEnvironment());
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
          done();
        },
      }),
    );
    logoutReceiver = await LogoutReceiver.start();
    sigil = await startSigil({ clients: [...(testConfig().clients ?? []), webLike('bc', { backChannelLogoutUri: `${logoutReceiver.url}/bc` })] }, { logger });
    await sigil.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await sigil?.close();
    await logoutReceiver?.close();
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
    expect((audit?.event as { traceId?: string }).traceId).toBe(request!.traceId);
  });

  it('records no query value and no caller address of a request', async () => {
    const { port } = sigil.app.server.address() as { port: number };
    const hint = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJzZWNyZXQtaGludCJ9.';
    const res = await fetch(`http://127.0.0.1:${port}/connect/endsession?id_token_hint=${hint}&state=private-state`, { redirect: 'manual' });
    expect(res.status).toBeLessThan(500);
    let span: OtlpSpan | undefined;
    await waitForSpans((spans) => (span = spans.find((s) => s.name === 'GET /connect/endsession')) !== undefined);
    expect(span).toBeDefined();
    expect(attribute(span!, 'url.query')).toBe('id_token_hint=REDACTED&state=REDACTED');
    const exported = JSON.stringify(span);
    expect(exported).not.toContain(hint);
    expect(exported).not.toContain('private-state');
    for (const key of ['client.address', 'network.peer.address', 'network.peer.port']) expect(attribute(span!, key)).toBeUndefined();
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
      return delivery !== undefined && spans.some((s) => s.parentSpanId === delivery!.spanId && s.name === 'store.logout.finishDelivery');
    });
    expect(delivery, JSON.stringify(spans.map((s) => s.name))).toBeDefined();
    expect(spans.find((s) => s.name === 'store.logout.finishDelivery' && s.parentSpanId === delivery!.spanId)).toBeDefined();
  });
});

describe('tracing without OTEL_* variables', () => {
  it('is off: tracingRequested is false for an empty environment and for an exporter set to none', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
  });
});
