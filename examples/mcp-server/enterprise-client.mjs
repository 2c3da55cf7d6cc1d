/**
 * The MCP client's side of enterprise-managed authorization: the Identity Assertion JWT
 * Authorization Grant (ID-JAG, draft-ietf-oauth-identity-assertion-authz-grant). No browser and no
 * consent page at the MCP server's authorization server: the company's identity provider (IdP)
 * vouches for the user.
 *
 * 1. The client already signed the user in at the enterprise IdP and holds an identity token.
 * 2. It asks the MCP server where its tokens come from (Protected Resource Metadata, RFC 9728).
 * 3. It exchanges the identity token at the IdP (token exchange, RFC 8693) for an ID-JAG whose
 *    `aud` is that authorization server and whose `resource` is the MCP server.
 * 4. It redeems the ID-JAG at the authorization server (the JWT bearer grant, RFC 7523 §2.1), with
 *    the client id it has there, and gets an access token for the MCP server.
 *
 * `IdJagProvider` is an `OAuthClientProvider` of the official MCP SDK that does 2 to 4: the SDK's
 * transport calls its `prepareTokenRequest` when the server answers 401, and a client without a
 * `redirectUrl` is one that needs no browser. Both sides can be Sigil: as the IdP (a client with
 * `idJagAudiences`) and as the MCP server's authorization server (`trustedIdentityIssuers`); see
 * README.md next to this file.
 *
 *   node examples/mcp-server/enterprise-client.mjs
 *
 * Environment: IDP_ISSUER, IDP_CLIENT_ID, IDP_CLIENT_SECRET (the client at the IdP), ID_TOKEN (the
 * identity token the IdP issued to it), MCP_CLIENT_ID, MCP_CLIENT_SECRET (the client at the MCP
 * server's authorization server), MCP_SERVER_URL (default http://localhost:5002/mcp), MCP_SCOPE
 * (default mcp:tools). It calls the server's `whoami` tool and prints the answer.
 */
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { discoverOAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** The token exchange grant (RFC 8693 §2.1), asked at the IdP. */
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** The JWT bearer grant (RFC 7523 §2.1), asked at the MCP server's authorization server. */
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** The ID-JAG's token type (the draft's "Token Exchange"). */
export const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
/** An OpenID Connect identity token as the subject token (RFC 8693 §3). */
export const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';

/**
 * Asks the enterprise IdP for an ID-JAG (token exchange, RFC 8693 §2.1; the draft's "Token
 * Exchange").
 * @param {{ issuer: string, clientId: string, clientSecret: string, idToken: string }} idp
 * @param {{ audience: string, resource: string, scope?: string }} target the authorization
 *   server's issuer, the MCP server's resource identifier, the scopes asked for
 * @returns {Promise<string>} the ID-JAG (a JWT of `typ` oauth-id-jag+jwt)
 * @throws Error with the IdP's `error` and `error_description` when it refuses
 */
export async function requestIdJag(idp, target) {
  const discovery = await (await fetch(`${idp.issuer}/.well-known/openid-configuration`)).json();
  const res = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(idp.clientId)}:${encodeURIComponent(idp.clientSecret)}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: TOKEN_EXCHANGE,
      requested_token_type: ID_JAG,
      subject_token: idp.idToken,
      subject_token_type: ID_TOKEN,
      audience: target.audience,
      resource: target.resource,
      ...(target.scope ? { scope: target.scope } : {}),
    }),
  });
  const body = await res.json();
  if (!res.ok || body.issued_token_type !== ID_JAG)
    throw new Error(`the IdP refused the ID-JAG: ${body.error ?? res.status} ${body.error_description ?? ''}`.trim());
  return body.access_token;
}

/**
 * An `OAuthClientProvider` (MCP SDK) that gets its access tokens with an ID-JAG instead of a
 * browser sign-in: no `redirectUrl`, so the SDK runs no authorization request; `prepareTokenRequest`
 * builds the JWT bearer grant's parameters (RFC 7523 §2.1) with a fresh ID-JAG each time (it lives
 * five minutes and is single use). The client is registered beforehand at the MCP server's
 * authorization server (`clientId`, `clientSecret`), as the draft's "Cross-Domain Client ID
 * Handling" expects.
 */
export class IdJagProvider {
  /**
   * @param {{
   *   idp: { issuer: string, clientId: string, clientSecret: string, idToken: string },
   *   clientId: string, clientSecret: string, resource: string, scope?: string
   * }} options
   */
  constructor(options) {
    this.options = options;
    this.saved = undefined;
  }
  /** None: the grant needs no browser. */
  get redirectUrl() {
    return undefined;
  }
  get clientMetadata() {
    return {
      redirect_uris: [],
      grant_types: [JWT_BEARER],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: this.options.scope ?? 'mcp:tools',
    };
  }
  clientInformation() {
    return { client_id: this.options.clientId, client_secret: this.options.clientSecret };
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  redirectToAuthorization() {
    throw new Error('enterprise-managed authorization needs no browser');
  }
  saveCodeVerifier() {}
  codeVerifier() {
    return '';
  }
  /**
   * The token request: the authorization server named by the MCP server's metadata (RFC 9728 §2
   * `authorization_servers`) is the ID-JAG's audience.
   * @param {string | undefined} scope
   */
  async prepareTokenRequest(scope) {
    const { resource } = this.options;
    const metadata = await discoverOAuthProtectedResourceMetadata(resource);
    const audience = String(metadata.authorization_servers?.[0] ?? '');
    if (audience === '') throw new Error('the MCP server names no authorization server');
    const assertion = await requestIdJag(this.options.idp, { audience, resource, scope });
    return new URLSearchParams({ grant_type: JWT_BEARER, assertion, ...(scope ? { scope } : {}) });
  }
}

/**
 * Connects to the MCP server at `resource` with an `IdJagProvider` and calls its `whoami` tool.
 * @param {ConstructorParameters<typeof IdJagProvider>[0]} options
 * @returns {Promise<{ answer: unknown, tokens: unknown }>} the tool's answer (parsed JSON) and the tokens
 */
export async function callWhoami(options) {
  const provider = new IdJagProvider(options);
  const client = new Client({ name: 'sigil-enterprise-example', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(options.resource), { authProvider: provider }));
  try {
    const result = await client.callTool({ name: 'whoami' });
    return { answer: JSON.parse(result.content?.[0]?.text ?? 'null'), tokens: provider.tokens() };
  } finally {
    await client.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const env = (name, fallback) => {
    const value = process.env[name] ?? fallback;
    if (value === undefined) throw new Error(`${name} is not set`);
    return value;
  };
  const { answer } = await callWhoami({
    idp: {
      issuer: env('IDP_ISSUER'),
      clientId: env('IDP_CLIENT_ID'),
      clientSecret: env('IDP_CLIENT_SECRET'),
      idToken: env('ID_TOKEN'),
    },
    clientId: env('MCP_CLIENT_ID'),
    clientSecret: env('MCP_CLIENT_SECRET'),
    resource: env('MCP_SERVER_URL', 'http://localhost:5002/mcp'),
    scope: env('MCP_SCOPE', 'mcp:tools'),
  });
  console.log(JSON.stringify(answer));
}
