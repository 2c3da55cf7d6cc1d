#!/usr/bin/env node
/**
 * An MCP server (Model Context Protocol, Streamable HTTP, built with the official
 * @modelcontextprotocol/sdk) whose one tool, `whoami`, only answers callers with an access token
 * from Sigil made for this server:
 *
 * - It publishes OAuth 2.0 Protected Resource Metadata (RFC 9728) at
 *   `/.well-known/oauth-protected-resource` and at the path-suffixed
 *   `/.well-known/oauth-protected-resource/mcp`: its resource identifier (its URL), Sigil as the
 *   authorization server, the scope it needs.
 * - Without a valid token it answers 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
 *   (RFC 9728 §5.1), which is where an MCP client starts to find Sigil.
 * - A token is a JWT access token (RFC 9068) checked with jose against Sigil's JWKS: its signature,
 *   `typ` at+jwt, `iss` Sigil, `exp`, and `aud` this server's URL, which Sigil puts there when
 *   the client asked for it as a resource indicator (RFC 8707) and an API resource of Sigil is
 *   named by that URL and lists it in `resourceUris`. A token for any other API is refused.
 *
 *   node examples/mcp-server/server.mjs
 *
 * Environment: SIGIL_ISSUER (default http://localhost:5000), MCP_SERVER_URL (this server's
 * resource identifier, default http://localhost:5002/mcp; it listens on that URL's port), MCP_SCOPE
 * (the scope the tool needs, default mcp:tools). See README.md next to this file for Sigil's config.
 *
 * The SDK's own bearer and metadata helpers are written for express; this example uses node:http
 * and the SDK's StreamableHTTPServerTransport directly, so it needs no web framework.
 */
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';

/**
 * Starts the MCP server.
 * @param {{ issuer?: string, url?: string, scope?: string }} [options]
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function startMcpServer(options = {}) {
  const issuer = (options.issuer ?? process.env.SIGIL_ISSUER ?? 'http://localhost:5000').replace(/\/+$/, '');
  const resource = options.url ?? process.env.MCP_SERVER_URL ?? 'http://localhost:5002/mcp';
  const scope = options.scope ?? process.env.MCP_SCOPE ?? 'mcp:tools';
  const base = new URL(resource);
  const metadataUrl = `${base.origin}/.well-known/oauth-protected-resource${base.pathname}`;
  const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
  const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri));

  /** RFC 9728 §2: who this resource is and where its tokens come from. */
  const metadata = JSON.stringify({
    resource,
    authorization_servers: [issuer],
    scopes_supported: [scope],
    bearer_methods_supported: ['header'],
    resource_name: 'Sigil example MCP server',
  });

  /** The 401 of RFC 6750 §3 with the metadata's URL (RFC 9728 §5.1). */
  const challenge = (res, status, error) => {
    const params = [`resource_metadata="${metadataUrl}"`, `scope="${scope}"`, ...(error ? [`error="${error}"`] : [])];
    res.writeHead(status, { 'www-authenticate': `Bearer ${params.join(', ')}`, 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: error ?? 'unauthorized' }));
  };

  /** The caller's token as the SDK's AuthInfo, or undefined when it is missing or not for this server. */
  const authenticate = async (header) => {
    const token = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(header ?? '')?.[1];
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer, audience: resource, typ: 'at+jwt' });
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
      return {
        token,
        clientId: String(payload.client_id ?? ''),
        scopes,
        expiresAt: payload.exp,
        resource: new URL(resource),
        extra: { sub: payload.sub },
      };
    } catch {
      return undefined;
    }
  };

  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', base.origin).pathname;
    if (
      req.method === 'GET' &&
      (path === '/.well-known/oauth-protected-resource' ||
        path === `/.well-known/oauth-protected-resource${base.pathname}`)
    ) {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' });
      res.end(metadata);
      return;
    }
    if (path !== base.pathname) {
      res.writeHead(404);
      res.end();
      return;
    }
    const auth = await authenticate(req.headers.authorization);
    if (!auth) return challenge(res, 401, req.headers.authorization ? 'invalid_token' : undefined);
    if (!auth.scopes.includes(scope)) return challenge(res, 403, 'insufficient_scope');
    // Stateless Streamable HTTP: a server and transport per request, as the SDK's examples do.
    const mcp = new McpServer({ name: 'sigil-example', version: '1.0.0' });
    mcp.registerTool(
      'whoami',
      { title: 'Who am I', description: 'The user and client the access token was issued to' },
      async (extra) => ({
        content: [
          {
            type: 'text',
            text: JSON.stringify({
              sub: extra.authInfo?.extra?.sub,
              client_id: extra.authInfo?.clientId,
              scope: extra.authInfo?.scopes.join(' '),
            }),
          },
        ],
      }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    req.auth = auth;
    await transport.handleRequest(req, res);
  });
  await new Promise((ok) =>
    server.listen(Number(base.port || 80), base.hostname === 'localhost' ? '127.0.0.1' : base.hostname, ok),
  );
  return {
    url: resource,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { url } = await startMcpServer();
  console.log(`MCP server at ${url}`);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
}
