/**
 * Enterprise-managed authorization for the example MCP server (ID-JAG,
 * draft-ietf-oauth-identity-assertion-authz-grant), between real processes and sockets: Sigil I is
 * the enterprise identity provider, which signed the user in to the agent (code flow) and issues
 * it an ID-JAG by token exchange; Sigil R is the MCP server's authorization server, which trusts
 * I's keys and redeems the ID-JAG with the JWT bearer grant; the example MCP server
 * (examples/mcp-server/server.mjs) checks R's token; the example client
 * (examples/mcp-server/enterprise-client.mjs, the official MCP SDK's client with an
 * OAuthClientProvider that runs the grant) finds R from the server's metadata and calls the tool,
 * with no browser at R.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, codeParams, getCode, pkce, redeem, webLike } from '../authorize-helpers.js';
import { basic, startSigil, type TestSigil } from '../helpers.js';
import { freePort } from './ports.js';

const SERVER = resolve(import.meta.dirname, '../../examples/mcp-server/server.mjs');
const CLIENT = resolve(import.meta.dirname, '../../examples/mcp-server/enterprise-client.mjs');
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const SCOPE = 'mcp:tools';

let idp: TestSigil;
let as: TestSigil;
let mcp: ChildProcess;
let mcpUrl = '';
let aliceAtAs = '';
let idToken = '';

beforeAll(async () => {
  const [idpPort, asPort, mcpPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const idpIssuer = `http://127.0.0.1:${idpPort}`;
  const asIssuer = `http://127.0.0.1:${asPort}`;
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  idp = await startSigil({
    issuer: idpIssuer,
    clients: [
      webLike('agent', {
        allowedGrantTypes: ['authorization_code', TOKEN_EXCHANGE],
        allowedScopes: ['openid', 'email'],
        allowOfflineAccess: false,
        idJagAudiences: [{ issuer: asIssuer, clientId: 'agent-at-mcp' }],
      }),
    ],
  });
  await idp.app.listen({ port: idpPort, host: '127.0.0.1' });
  as = await startSigil({
    issuer: asIssuer,
    // I's keys are on loopback (development and tests only).
    clientIdMetadataDocuments: { allowLoopback: true },
    apiScopes: [{ name: SCOPE, displayName: 'Use the example MCP tools' }],
    apiResources: [{ name: mcpUrl, scopes: [SCOPE], resourceUris: [mcpUrl] }],
    users: [],
    clients: [
      {
        clientId: 'agent-at-mcp',
        clientSecrets: ['agent-mcp-secret'],
        allowedGrantTypes: [JWT_BEARER],
        allowedScopes: [SCOPE],
      },
    ],
    trustedIdentityIssuers: [
      { issuer: idpIssuer, jwksUri: `${idpIssuer}/.well-known/openid-configuration/jwks`, subjectMapping: 'email' },
    ],
  });
  await as.app.listen({ port: asPort, host: '127.0.0.1' });
  ({ subjectId: aliceAtAs } = await as.context.management.users.create({
    username: 'alice.mcp',
    email: 'alice@example.com',
    emailVerified: true,
  }));
  // The agent signed alice in at the IdP: its identity token.
  const { verifier, challenge } = pkce();
  const code = await getCode(new Browser(idp), codeParams(challenge, { client_id: 'agent', scope: 'openid email' }));
  const tokens = await redeem(idp, code, { client: 'agent', verifier });
  idToken = tokens.json<{ id_token: string }>().id_token;

  mcp = spawn(process.execPath, [SERVER], {
    env: { ...process.env, SIGIL_ISSUER: asIssuer, MCP_SERVER_URL: mcpUrl },
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
  await Promise.allSettled([idp?.close(), as?.close()]);
});

/** Runs the example client with `env` and returns its output, or its error output when it fails. */
async function runClient(env: Record<string, string>): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [CLIENT], {
      env: {
        ...process.env,
        IDP_ISSUER: idp.context.issuer,
        IDP_CLIENT_ID: 'agent',
        IDP_CLIENT_SECRET: 'agent-secret',
        ID_TOKEN: idToken,
        MCP_CLIENT_ID: 'agent-at-mcp',
        MCP_CLIENT_SECRET: 'agent-mcp-secret',
        MCP_SERVER_URL: mcpUrl,
        ...env,
      },
      timeout: 30_000,
    });
    return { ok: true, out: stdout };
  } catch (e) {
    return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
  }
}

describe('the example MCP server with enterprise-managed authorization (ID-JAG)', () => {
  it('the SDK client gets an ID-JAG from the IdP, redeems it at the MCP server’s authorization server and calls the tool', async () => {
    const { ok, out } = await runClient({});
    expect(ok, out).toBe(true);
    // The user as the MCP server's authorization server knows her (found by her verified email).
    expect(JSON.parse(out)).toEqual({ sub: aliceAtAs, client_id: 'agent-at-mcp', scope: SCOPE });
  }, 60_000);

  it('refuses what the IdP did not vouch for: another audience, a replayed ID-JAG, a client with a wrong secret', async () => {
    const exchange = (audience: string) =>
      fetch(`${idp.context.issuer}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('agent', 'agent-secret') },
        body: new URLSearchParams({
          grant_type: TOKEN_EXCHANGE,
          requested_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
          subject_token: idToken,
          subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
          audience,
          resource: mcpUrl,
          scope: SCOPE,
        }),
      });
    const other = await exchange('https://other-as.example');
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: string }).error).toBe('invalid_target');

    const jag = ((await (await exchange(as.context.issuer)).json()) as { access_token: string }).access_token;
    expect(decodeJwt(jag)).toMatchObject({ aud: as.context.issuer, client_id: 'agent-at-mcp', resource: mcpUrl });
    const redeemAt = (client: [string, string]) =>
      fetch(`${as.context.issuer}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(...client) },
        body: new URLSearchParams({ grant_type: JWT_BEARER, assertion: jag, resource: mcpUrl }),
      });
    const first = await redeemAt(['agent-at-mcp', 'agent-mcp-secret']);
    expect(first.status).toBe(200);
    expect(decodeJwt(((await first.json()) as { access_token: string }).access_token).aud).toBe(mcpUrl);
    const replay = await redeemAt(['agent-at-mcp', 'agent-mcp-secret']);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe('invalid_grant');

    // The example client with a wrong secret at the authorization server: refused, no tool call.
    const wrong = await runClient({ MCP_CLIENT_SECRET: 'not-the-secret' });
    expect(wrong.ok).toBe(false);
  }, 60_000);
});
