/**
 * An MCP client signs in through Sigil, end to end, with the official MCP TypeScript SDK: its
 * OAuth support (the `auth()` flow behind StreamableHTTPClientTransport) finds the example MCP
 * server's Protected Resource Metadata (RFC 9728), then Sigil's metadata, registers, runs the
 * code flow with PKCE and `resource` (RFC 8707) while Chromium signs the user in and consents on
 * Sigil's pages, and calls the server's tool. The access token's `aud` is the MCP server; a token
 * for another API is refused by it.
 *
 * Each way of registering is a case of `REGISTRATIONS`: Client ID Metadata Documents (a
 * document served by the test on loopback, with Sigil's development setting allowing loopback),
 * and Dynamic Client Registration (RFC 7591) at /connect/register, open for this test's Sigil
 * only: the SDK (1.32) sends no initial access token. The SDK asks
 * `/.well-known/oauth-authorization-server` (RFC 8414) first; its
 * `client_id_metadata_document_supported` makes it use a document's URL as its client_id when the
 * provider has one, its `registration_endpoint` the way to register otherwise.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startProcess, testConfig } from '../helpers.js';
import { launchChromium, newPage, submitLogin } from './browser-fixture.js';
import { DocumentServer, json } from './document-server.js';
import { freePort } from './ports.js';

const EXAMPLE = resolve(import.meta.dirname, '../../examples/mcp-server/server.mjs');
const SCOPE = 'mcp:tools';

/**
 * Where the browser brings the authorization response: a loopback listener of the test (a native app's, RFC
 * 8252 §7.3).
 */
class LoopbackCallback {
  private server!: Server;
  url = '';
  private waiting: ((code: URLSearchParams) => void) | undefined;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html lang="en"><title>Done</title><p>You may close this window.</p></html>');
      const url = new URL(req.url ?? '/', this.url);
      // Only the redirect itself, not the browser's favicon request.
      if (url.pathname === '/callback') this.waiting?.(url.searchParams);
    });
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/callback`;
    return this;
  }

  next(): Promise<URLSearchParams> {
    return new Promise((ok) => (this.waiting = ok));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

/** An OAuthClientProvider keeping everything in memory, sending the browser to Sigil with `visit`. */
class MemoryProvider implements OAuthClientProvider {
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';

  constructor(
    readonly redirectUrl: string,
    readonly clientMetadata: OAuthClientMetadata,
    private readonly visit: (url: URL) => Promise<void>,
    readonly clientMetadataUrl?: string,
  ) {}

  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    return this.visit(url);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** One way for an MCP client to become known to Sigil. */
interface Registration {
  name: string;
  /** The provider's client metadata URL when the client is known by its document. */
  clientMetadataUrl?: (callback: string) => string;
  /** The client_id Sigil is expected to have issued tokens to. */
  expectedClientId: (info: OAuthClientInformationMixed | undefined) => string | undefined;
}

const docs = new DocumentServer();
let sigil: ServerProcess;
let browser: Browser;
let mcp: ChildProcess;
let mcpUrl = '';
const callback = new LoopbackCallback();
/** The URLs the SDK fetched, in order. */
const fetched: string[] = [];
const recordingFetch: typeof fetch = (input, init) => {
  fetched.push(input instanceof Request ? input.url : String(input));
  return fetch(input, init);
};

const CIMD_PATH = '/mcp-client.json';
const REGISTRATIONS: Registration[] = [
  {
    name: 'Client ID Metadata Document',
    clientMetadataUrl: () => `${docs.origin}${CIMD_PATH}`,
    expectedClientId: () => `${docs.origin}${CIMD_PATH}`,
  },
  {
    name: 'Dynamic Client Registration',
    // The client_id Sigil issued at /connect/register, as the SDK saved it.
    expectedClientId: (info) => info?.client_id,
  },
];

beforeAll(async () => {
  await Promise.all([docs.start(), callback.start()]);
  // The document registers the loopback redirect URI without a port: any port matches (RFC 8252 §7.3).
  docs.routes.set(
    CIMD_PATH,
    json({
      client_id: `${docs.origin}${CIMD_PATH}`,
      client_name: 'MCP test agent',
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  );
  const [sigilPort, mcpPort] = await Promise.all([freePort(), freePort()]);
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  const base = testConfig();
  [sigil, browser] = await Promise.all([
    startProcess(
      {
        ...base,
        clientIdMetadataDocuments: { allowLoopback: true },
        // Open registration for the DCR case (this process only): the SDK registers without an initial access
        // token. The scope policy is the default one: the SDK registers the server's mcp:tools, granted after
        // consent, as a metadata document's client gets it.
        registration: { enabled: true, open: true },
        apiScopes: [...(base.apiScopes ?? []), { name: SCOPE, displayName: 'Use the example MCP tools' }],
        // The API resource is named by the MCP server's URL, so that URL is the tokens' aud.
        apiResources: [...(base.apiResources ?? []), { name: mcpUrl, scopes: [SCOPE], resourceUris: [mcpUrl] }],
      },
      sigilPort,
      { env: { NODE_EXTRA_CA_CERTS: docs.certFile } },
    ),
    launchChromium(),
  ]);
  mcp = spawn(process.execPath, [EXAMPLE], {
    env: { ...process.env, SIGIL_ISSUER: sigil.url, MCP_SERVER_URL: mcpUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`MCP server did not start: ${out}`)), 20_000);
    const read = (b: Buffer) => {
      out += b.toString();
      if (out.includes('MCP server at')) {
        clearTimeout(timer);
        ok();
      }
    };
    mcp.stdout?.on('data', read);
    mcp.stderr?.on('data', read);
  });
});

afterAll(async () => {
  if (mcp && mcp.exitCode === null) {
    const exited = new Promise((r) => mcp.once('exit', r));
    mcp.kill('SIGTERM');
    await exited;
  }
  await Promise.allSettled([browser?.close(), sigil?.stop(), docs.close(), callback.close()]);
});

/**
 * Runs the SDK's OAuth flow for `registration`: connect (401, discovery, registration, redirect),
 * the user signs in and consents in Chromium, `finishAuth` with the code, connect again.
 * @returns the connected MCP client and the provider holding the tokens, and the consent page's text
 */
async function signIn(
  registration: Registration,
): Promise<{ client: Client; provider: MemoryProvider; consentText: string; authorization: URL }> {
  const { context, page } = await newPage(browser);
  let consentText = '';
  let authorization = new URL('about:blank');
  const visit = async (url: URL) => {
    authorization = url;
    await page.goto(url.href);
    await page.waitForURL(/\/account\/login\?interaction=/);
    await submitLogin(page, 'alice');
    await page.waitForURL(/\/consent\?interaction=/);
    consentText = await page.locator('main').innerText();
    await page.locator('button[name=button][value=yes]').click();
  };
  const provider = new MemoryProvider(
    callback.url,
    // A loopback redirect (RFC 8252 §7.3) and no application_type, as the SDK's clients register.
    {
      client_name: 'MCP test agent',
      redirect_uris: [callback.url],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    } as OAuthClientMetadata,
    visit,
    registration.clientMetadataUrl?.(callback.url),
  );
  const arrived = callback.next();
  const first = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: recordingFetch });
  const client = new Client({ name: 'sigil-e2e', version: '1.0.0' });
  await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const answer = await arrived;
  const code = answer.get('code');
  expect(code, answer.toString()).toBeTruthy();
  expect(answer.get('iss')).toBe(sigil.url);
  await first.finishAuth(code as string);
  await context.close();
  const connected = new Client({ name: 'sigil-e2e', version: '1.0.0' });
  await connected.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: recordingFetch }),
  );
  return { client: connected, provider, consentText, authorization };
}

describe.each(REGISTRATIONS)('an MCP client registered by $name', (registration) => {
  it('finds Sigil through the resource metadata, signs in with code + PKCE + resource, and calls the tool', async () => {
    const { client, provider, consentText, authorization } = await signIn(registration);
    // The authorization request: the resource indicator and PKCE S256 (RFC 8707 §2; RFC 7636).
    expect(authorization.searchParams.get('resource')).toBe(mcpUrl);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('client_id')).toBe(
      registration.expectedClientId(provider.clientInformation()),
    );
    // Discovery: the resource metadata first, then Sigil's own metadata.
    const prm = fetched.findIndex((u) => u.includes('/.well-known/oauth-protected-resource'));
    const asMetadata = fetched.findIndex((u) => u.startsWith(`${sigil.url}/.well-known/`));
    expect(prm).toBeGreaterThanOrEqual(0);
    expect(asMetadata).toBeGreaterThan(prm);
    // RFC 8414's URL first; without it (404) the SDK falls back to OpenID discovery.
    expect(fetched[asMetadata]).toBe(`${sigil.url}/.well-known/oauth-authorization-server`);
    // The consent page names the document's host (draft-ietf-oauth-client-id-metadata-document §"OAuth
    // Phishing Attacks").
    if (registration.clientMetadataUrl) expect(consentText).toContain(new URL(docs.origin).host);
    else {
      // Registered through the advertised registration endpoint, and shown by its registered name.
      expect(fetched).toContain(`${sigil.url}/connect/register`);
      expect(consentText).toContain('MCP test agent');
      // The scope the SDK took from the resource metadata, registered as asked (not widened).
      expect((provider.clientInformation() as { scope?: string }).scope).toBe(SCOPE);
    }
    // Either way the user was asked for the MCP server's scope.
    expect(consentText).toContain('Use the example MCP tools');

    const tokens = provider.tokens() as OAuthTokens;
    const claims = decodeJwt(tokens.access_token);
    expect(claims.aud).toBe(mcpUrl);
    expect(claims.client_id).toBe(registration.expectedClientId(provider.clientInformation()));
    expect(claims.scope).toBe(SCOPE);

    const result = await client.callTool({ name: 'whoami' });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    expect(JSON.parse(text)).toEqual({ sub: '1', client_id: claims.client_id, scope: SCOPE });
    await client.close();
  }, 60_000);
});

describe('a client of a metadata document', () => {
  it('gets the consent page at every sign-in, without a remember box, even after a forged remember=yes', async () => {
    const { context, page } = await newPage(browser);
    const params = {
      client_id: `${docs.origin}${CIMD_PATH}`,
      redirect_uri: callback.url,
      response_type: 'code',
      scope: SCOPE,
      resource: mcpUrl,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    };
    const authorizeUrl = `${sigil.url}/connect/authorize?${new URLSearchParams(params)}`;
    for (const round of [1, 2]) {
      const arrived = callback.next();
      await page.goto(authorizeUrl);
      // The second time the session is there: no login, but consent again.
      if (round === 1) {
        await page.waitForURL(/\/account\/login\?interaction=/);
        await submitLogin(page, 'alice');
      }
      await page.waitForURL(/\/consent\?interaction=/);
      expect(await page.locator('input[name=remember]').count()).toBe(0);
      await expect(page.locator('main').innerText()).resolves.toContain(new URL(docs.origin).host);
      // Even a hand-made remember=yes is not remembered for such a client.
      await page.evaluate(() => {
        const input = Object.assign(document.createElement('input'), {
          type: 'hidden',
          name: 'remember',
          value: 'yes',
        });
        document.querySelector('form[action="/consent"]')?.append(input);
      });
      await page.locator('button[name=button][value=yes]').click();
      const answer = await arrived;
      expect(answer.get('code'), answer.toString()).toBeTruthy();
    }
    await context.close();
  }, 30_000);
});

describe('the example MCP server', () => {
  it('answers 401 with its resource metadata, serves that metadata, and refuses a token for another API', async () => {
    const anonymous = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(anonymous.status).toBe(401);
    const challenge = anonymous.headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1] ?? '';
    expect(metadataUrl).toBe(`${new URL(mcpUrl).origin}/.well-known/oauth-protected-resource/mcp`);
    const metadata = (await (await fetch(metadataUrl)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({ resource: mcpUrl, authorization_servers: [sigil.url], scopes_supported: [SCOPE] });

    // A valid Sigil token, but for api1: its aud is not the MCP server.
    const grant = await fetch(`${sigil.url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('ropc:ropc-secret').toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' }),
    });
    const other = ((await grant.json()) as { access_token: string }).access_token;
    expect(decodeJwt(other).aud).toBe('api1');
    const refused = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${other}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});
