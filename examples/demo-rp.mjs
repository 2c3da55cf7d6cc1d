#!/usr/bin/env node
/**
 * Sigil's demo relying party: a tiny web application (node:http, no framework) that signs users
 * in with Sigil through the authorization code flow with PKCE (S256), `state` and `nonce`, using
 * openid-client v6. It shows the identity token's claims (validated by openid-client: signature,
 * iss, aud, exp, nonce, at_hash) and the userinfo response, and signs out through Sigil's
 * end_session_endpoint with `id_token_hint` and `post_logout_redirect_uri`.
 *
 *   npm start                     # Sigil on http://localhost:5000 and this demo on http://localhost:5001
 *   node examples/demo-rp.mjs     # this demo alone, against a Sigil that is already running
 *
 * Environment: SIGIL_ISSUER (default http://localhost:5000), DEMO_RP_URL (this application's
 * own URL, default http://localhost:5001), DEMO_CLIENT_ID / DEMO_CLIENT_SECRET (default the
 * `demo-web` client of examples/sigil.json). The client must register `<DEMO_RP_URL>/callback`
 * as a redirect URI and `<DEMO_RP_URL>/` as a post-logout redirect URI.
 *
 * This is teaching code for localhost: sessions live in memory, and the cookie is not `Secure`
 * because the demo runs on plain http.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import * as oidc from 'openid-client';

/** The scopes the demo asks for: identity (openid, profile, email), an API, and a refresh token. */
const SCOPE = 'openid profile email api1 offline_access';
/** Name of the demo's own session cookie (distinct from Sigil's: cookies ignore ports). */
const COOKIE = 'sigil_demo_rp';
/** Forget a session after an hour. */
const SESSION_LIFETIME_MS = 3_600_000;

/**
 * Starts the demo relying party.
 * @param {{ issuer?: string, url?: string, clientId?: string, clientSecret?: string }} [options]
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function startDemoRp(options = {}) {
  const issuer = (options.issuer ?? process.env.SIGIL_ISSUER ?? 'http://localhost:5000').replace(/\/+$/, '');
  const base = new URL(options.url ?? process.env.DEMO_RP_URL ?? 'http://localhost:5001');
  const origin = base.origin;
  const clientId = options.clientId ?? process.env.DEMO_CLIENT_ID ?? 'demo-web';
  const clientSecret = options.clientSecret ?? process.env.DEMO_CLIENT_SECRET ?? 'demo-web-secret';
  const redirectUri = `${origin}/callback`;
  const postLogoutRedirectUri = `${origin}/`;

  /** @type {Promise<oidc.Configuration> | undefined} */
  let discovered;
  /** Discovery on first use, retried after a failure (Sigil may start after the demo). */
  const configuration = () => {
    discovered ??= oidc
      .discovery(new URL(issuer), clientId, clientSecret, oidc.ClientSecretBasic(clientSecret), {
        // openid-client refuses plain-http issuers; allowing them is only acceptable because the
        // demo talks to a Sigil on localhost. Never pass allowInsecureRequests in production.
        execute: [oidc.allowInsecureRequests],
      })
      .catch((err) => {
        discovered = undefined;
        throw err;
      });
    return discovered;
  };

  /** @type {Map<string, Session>} */
  const sessions = new Map();

  /** The session of the request's cookie, created (with a fresh cookie) when absent. */
  const session = (req, res) => {
    const id = cookies(req)[COOKIE];
    const now = Date.now();
    for (const [key, s] of sessions) if (now - s.created > SESSION_LIFETIME_MS) sessions.delete(key);
    let s = id ? sessions.get(id) : undefined;
    if (!s) {
      const fresh = randomBytes(32).toString('base64url');
      s = { created: now };
      sessions.set(fresh, s);
      res.setHeader('set-cookie', `${COOKIE}=${fresh}; Path=/; HttpOnly; SameSite=Lax`);
    }
    return s;
  };

  const routes = {
    /** Home: a Sign in button, or what the sign-in returned. */
    'GET /': async (req, res, url) => {
      const s = session(req, res);
      if (s.user) return page(res, 200, 'Signed in', signedIn(s.user, issuer));
      const signedOut = url.searchParams.get('state') !== null && url.searchParams.get('state') === s.logoutState;
      delete s.logoutState;
      return page(res, 200, 'Sigil demo', home(issuer, clientId, signedOut));
    },
    /** Starts the authorization code flow with PKCE, state and nonce. */
    'GET /login': async (req, res) => {
      const config = await configuration();
      const s = session(req, res);
      const codeVerifier = oidc.randomPKCECodeVerifier();
      const pending = { codeVerifier, state: oidc.randomState(), nonce: oidc.randomNonce() };
      s.pending = pending;
      const target = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: SCOPE,
        code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      return redirect(res, target.href);
    },
    /** The redirect URI: checks state and iss, redeems the code, validates the identity token. */
    'GET /callback': async (req, res, url) => {
      const s = session(req, res);
      const pending = s.pending;
      delete s.pending;
      if (!pending)
        return page(res, 400, 'No sign-in in progress', problem('No sign-in is in progress in this browser.', null));
      const error = url.searchParams.get('error');
      if (error !== null)
        return page(
          res,
          400,
          'Sign-in did not complete',
          problem(`Sigil answered with an error: ${error}`, url.searchParams.get('error_description')),
        );
      const config = await configuration();
      let tokens;
      try {
        tokens = await oidc.authorizationCodeGrant(config, url, {
          pkceCodeVerifier: pending.codeVerifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
      } catch (err) {
        return page(
          res,
          400,
          'Sign-in did not complete',
          problem('The authorization response or the token response was refused.', describe(err)),
        );
      }
      const claims = tokens.claims();
      const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      s.user = {
        idToken: tokens.id_token,
        claims,
        userinfo,
        scope: tokens.scope ?? '',
        expiresIn: tokens.expires_in,
        refreshToken: tokens.refresh_token !== undefined,
      };
      return redirect(res, '/');
    },
    /** Signs out here, then at Sigil (RP-Initiated Logout), which sends the browser back to /. */
    'POST /logout': async (req, res) => {
      const s = session(req, res);
      const idToken = s.user?.idToken;
      delete s.user;
      if (!idToken) return redirect(res, '/');
      const config = await configuration();
      s.logoutState = oidc.randomState();
      const target = oidc.buildEndSessionUrl(config, {
        id_token_hint: idToken,
        post_logout_redirect_uri: postLogoutRedirectUri,
        state: s.logoutState,
      });
      return redirect(res, target.href);
    },
    'GET /demo.css': async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=300' });
      res.end(CSS);
    },
  };

  const handler = async (req, res) => {
    // No form-action: Chromium checks it against every redirect that follows a form submission,
    // and "Sign in" may pass through upstream identity providers (federation) at other origins.
    res.setHeader(
      'content-security-policy',
      "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    try {
      const url = new URL(req.url ?? '/', origin);
      const route = routes[`${req.method} ${url.pathname}`];
      if (!route) return page(res, 404, 'Not found', problem('There is no such page in the demo.', null));
      await route(req, res, url);
    } catch (err) {
      if (!res.headersSent)
        page(
          res,
          502,
          'Sigil is not reachable',
          problem(`The demo could not talk to Sigil at ${issuer}. Is it running (npm start)?`, describe(err)),
        );
      else res.end();
    }
  };

  // Loopback only, on both address families when the host is "localhost".
  const hosts = base.hostname === 'localhost' ? ['127.0.0.1', '::1'] : [base.hostname.replace(/^\[|\]$/g, '')];
  const port = Number(base.port || 80);
  const servers = [];
  for (const host of hosts) {
    const server = createServer((req, res) => void handler(req, res));
    try {
      await new Promise((ok, fail) => {
        server.once('error', fail);
        server.listen(port, host, () => ok(undefined));
      });
      servers.push(server);
    } catch (err) {
      // A machine without IPv6 still serves the demo on 127.0.0.1.
      if (host === '::1' && servers.length > 0 && err.code === 'EADDRNOTAVAIL') continue;
      await Promise.all(servers.map((s) => new Promise((ok) => s.close(() => ok(undefined)))));
      throw err;
    }
  }
  return {
    url: origin,
    close: () =>
      Promise.all(
        servers.map((s) => {
          s.closeAllConnections();
          return new Promise((ok) => s.close(() => ok(undefined)));
        }),
      ).then(() => undefined),
  };
}

/**
 * @typedef {{ created: number, pending?: { codeVerifier: string, state: string, nonce: string },
 *   user?: { idToken: string, claims: Record<string, unknown>, userinfo: Record<string, unknown>,
 *   scope: string, expiresIn?: number, refreshToken: boolean }, logoutState?: string }} Session
 */

/** HTML-escapes text for element content and quoted attribute values. */
function esc(value) {
  return String(value).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
}

/** JSON, pretty-printed and escaped, for a <pre>. */
function json(value) {
  return esc(JSON.stringify(value, null, 2));
}

function describe(err) {
  if (err instanceof oidc.ResponseBodyError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
  return err instanceof Error ? err.message : String(err);
}

function home(issuer, clientId, signedOut) {
  return `
<h1>Sign in with Sigil</h1>
${signedOut ? '<p class="note" role="status">You are signed out, here and at Sigil.</p>' : ''}
<p>This small web application is a relying party of the Sigil server at <code>${esc(issuer)}</code>.
It signs you in with the <strong>authorization code flow with PKCE</strong> as the client <code>${esc(clientId)}</code>.</p>
<form method="get" action="/login"><button type="submit" class="primary">Sign in</button></form>
<p class="hint">Demo users: <code>alice</code> / <code>alice</code> and <code>bob</code> / <code>bob</code>.</p>`;
}

function signedIn(user, issuer) {
  const name = user.userinfo.name ?? user.claims.sub;
  return `
<h1>Hello, ${esc(name)}</h1>
<p>You signed in at <code>${esc(issuer)}</code>. openid-client validated the identity token
(signature, issuer, audience, expiry, nonce) and fetched the userinfo endpoint with the access token.</p>
<h2>Identity token claims</h2>
<pre id="id-token-claims">${json(user.claims)}</pre>
<h2>Userinfo response</h2>
<pre id="userinfo">${json(user.userinfo)}</pre>
<h2>Token response</h2>
<dl>
<dt>Granted scopes</dt><dd><code>${esc(user.scope)}</code></dd>
<dt>Access token lifetime</dt><dd>${esc(user.expiresIn ?? '?')} seconds</dd>
<dt>Refresh token</dt><dd>${user.refreshToken ? 'received (offline_access)' : 'none'}</dd>
</dl>
<form method="post" action="/logout"><button type="submit" class="primary">Sign out</button></form>`;
}

function problem(text, detail) {
  return `
<h1>Something went wrong</h1>
<p>${esc(text)}</p>
${detail ? `<pre>${esc(detail)}</pre>` : ''}
<p><a href="/">Back to the demo</a></p>`;
}

function page(res, status, title, body) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · Sigil demo</title>
<link rel="stylesheet" href="/demo.css">
</head>
<body>
<main>
<p class="brand">Sigil · demo application</p>
${body}
</main>
</body>
</html>`);
}

function redirect(res, location) {
  res.writeHead(303, { location, 'cache-control': 'no-store' });
  res.end();
}

function cookies(req) {
  const out = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

const CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #f6f8fa; --card: #fff; --line: #d0d7de;
  --accent: #0b5cad; --accent-fg: #fff; --focus: #b45309; --code: #eef1f4; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --card: #161b22;
  --line: #30363d; --accent: #4493f8; --accent-fg: #0d1117; --focus: #f59e0b; --code: #0d1117; } }
* { box-sizing: border-box; }
body { margin: 0; padding: 2rem 1rem; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg); }
main { max-width: 44rem; margin: 0 auto; background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 2rem 1.75rem; }
.brand { font-weight: 700; color: var(--accent); margin: 0 0 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 .75rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
p { color: var(--muted); }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
pre { background: var(--code); border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem; overflow-x: auto; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; }
dt { font-weight: 600; } dd { margin: 0; }
button { margin-top: 1rem; min-height: 2.75rem; padding: .6rem 1.4rem; font: inherit; font-weight: 600; border-radius: 8px; cursor: pointer;
  border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg); }
button:focus-visible, a:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
a { color: var(--accent); }
.note { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .8rem; color: var(--fg); }
.hint { font-size: .9rem; }
dd code { overflow-wrap: anywhere; }
@media (max-width: 480px) {
  body { padding: 0; background: var(--card); }
  main { border: 0; border-radius: 0; padding: 1.25rem 1rem 2rem; }
  dl { grid-template-columns: 1fr; } dd { margin-bottom: .5rem; }
  pre { font-size: .8rem; }
}
`;

// Run directly: `node examples/demo-rp.mjs`.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rp = await startDemoRp();
  console.log(`sigil demo: relying party at ${rp.url} (issuer ${process.env.SIGIL_ISSUER ?? 'http://localhost:5000'})`);
  const stop = () => void rp.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
