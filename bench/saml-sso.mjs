// SAML single sign-on next to the OpenID Connect code flow, on one `sigil start` (SQLite, the
// defaults), in one run: how many SSO answers per CPU-second of Sigil each gives to a browser
// already signed in.
//
//   npm run build && node bench/saml-sso.mjs
//   env: BENCH_DURATION (seconds per turn, default 5), BENCH_ROUNDS (default 3),
//        BENCH_CONNECTIONS (default 8)
//
// One user signs in once on the login page; its session cookie then rides on every request:
//   oidc  GET /connect/authorize (code flow with PKCE S256, no consent): a 303 to the client's
//         redirect URI with a code (a grant stored, not redeemed)
//   saml  GET /saml/sso with a fresh HTTP-Redirect AuthnRequest (DEFLATE, base64; a new ID each,
//         since Sigil refuses a replayed one): a 200 page posting a signed Response (RSA-SHA256,
//         response and assertion signed, the SP's default) to the SP's ACS
// Turns alternate (oidc saml saml oidc ...) so that the shared machine's load weighs on both. The
// figure is answers per CPU-second of the Sigil process (user + system, /proc), which the load of
// other processes changes less than answers per wall-clock second (shown too).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import autocannon from 'autocannon';
import { cleanUp, cpuSeconds, freePort, startSigil, stopSigil } from './scale-kit.mjs';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const SP = 'https://sp.bench.example/metadata';
const ACS = 'https://sp.bench.example/acs';
const REDIRECT_URI = 'https://rp.bench.example/cb';
const USER = { username: 'bench', password: 'bench-lantern-29' };
// RFC 7636 appendix B's verifier's challenge: any valid S256 challenge does for an unredeemed code.
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

const config = {
  logLevel: 'warn',
  // Every AuthnRequest counts against its user's quota (300 per 10 minutes by default): the bench
  // measures answers, not the quota.
  pendingLimits: { interactionsPerAddress: 10_000_000 },
  identityResources: [
    { name: 'openid', userClaims: ['sub'], required: true },
    { name: 'email', userClaims: ['email', 'email_verified'] },
  ],
  clients: [
    {
      clientId: 'bench-web',
      requireClientSecret: false,
      allowedGrantTypes: ['authorization_code'],
      redirectUris: [REDIRECT_URI],
      allowedScopes: ['openid', 'email'],
      requireConsent: false,
    },
  ],
  saml: { enabled: true },
  samlServiceProviders: [{ entityId: SP, acsUrls: [ACS], attributes: { mail: 'email' } }],
  users: [
    {
      subjectId: 'bench-1',
      username: USER.username,
      password: USER.password,
      claims: { email: 'bench@example.com', email_verified: true },
    },
  ],
};

/** Signs the user in on the login page; the cookies of the signed-in browser. */
async function signIn(base) {
  const jar = new Map();
  const keep = (res) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair = ''] = c.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  };
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const page = await fetch(`${base}/account/login`);
  keep(page);
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const done = await fetch(`${base}/account/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
    body: new URLSearchParams({ csrf_token: csrf, ...USER, button: 'login' }),
  });
  keep(done);
  if (!jar.has('sigil.session')) throw new Error(`sign-in failed: ${done.status} ${await done.text()}`);
  return cookie();
}

/** The path of a fresh HTTP-Redirect AuthnRequest (SAML Bindings §3.4.4). */
function samlPath(base) {
  const xml =
    '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"' +
    ` ID="_${randomBytes(16).toString('hex')}" Version="2.0" IssueInstant="${new Date().toISOString()}"` +
    ` Destination="${base}/saml/sso" AssertionConsumerServiceURL="${ACS}"><saml:Issuer>${SP}</saml:Issuer></samlp:AuthnRequest>`;
  return `/saml/sso?SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}`;
}

const OIDC_PATH = `/connect/authorize?${new URLSearchParams({
  client_id: 'bench-web',
  redirect_uri: REDIRECT_URI,
  response_type: 'code',
  scope: 'openid email',
  state: 'bench',
  code_challenge: CHALLENGE,
  code_challenge_method: 'S256',
})}`;

/** Checks one answer of each kind before measuring: a code, a posted Response. */
async function probe(base, cookie) {
  const oidc = await fetch(`${base}${OIDC_PATH}`, { redirect: 'manual', headers: { cookie } });
  if (oidc.status !== 303 || !/[?&]code=/.test(oidc.headers.get('location') ?? ''))
    throw new Error(`authorize answered ${oidc.status} ${oidc.headers.get('location')}`);
  const saml = await fetch(`${base}${samlPath(base)}`, { headers: { cookie } });
  const body = await saml.text();
  if (saml.status !== 200 || !body.includes('name="SAMLResponse"'))
    throw new Error(`SSO answered ${saml.status}: ${body.slice(0, 300)}`);
}

/** One turn of `kind`: answers, answers per wall-second and per CPU-second of Sigil. */
async function turn(base, child, cookie, kind) {
  const expected = kind === 'oidc' ? 303 : 200;
  let wrong = 0;
  const cpu0 = cpuSeconds(child.pid);
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: DURATION,
    headers: { cookie },
    requests: [
      { method: 'GET', setupRequest: (req) => ({ ...req, path: kind === 'oidc' ? OIDC_PATH : samlPath(base) }) },
    ],
    setupClient: (client) =>
      client.on('response', (status) => {
        if (status !== expected) wrong++;
      }),
  });
  const cpu = cpuSeconds(child.pid) - cpu0;
  const answers = result.requests.total - wrong;
  return { answers, perSecond: answers / DURATION, perCpuSecond: answers / cpu, wrong };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'sigil-saml-bench-'));
  const file = join(dir, 'sigil.json');
  writeFileSync(file, JSON.stringify(config));
  const port = await freePort();
  const { child, base } = await startSigil(file, `sqlite:${join(dir, 'sigil.db')}`, port, 0);
  try {
    const cookie = await signIn(base);
    await probe(base, cookie);
    console.log(
      `saml-sso: ${CONNECTIONS} connections, ${DURATION} s turns, ${ROUNDS} rounds, node ${process.version}, ${cpus().length} CPUs, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    // Warm-up, untimed.
    await turn(base, child, cookie, 'oidc');
    await turn(base, child, cookie, 'saml');
    const totals = { oidc: [], saml: [] };
    for (let r = 0; r < ROUNDS; r++)
      for (const kind of r % 2 === 0 ? ['oidc', 'saml'] : ['saml', 'oidc']) {
        const t = await turn(base, child, cookie, kind);
        if (t.wrong > 0) throw new Error(`${kind}: ${t.wrong} answers were not ${kind === 'oidc' ? 303 : 200}`);
        totals[kind].push(t);
        console.log(
          `round ${r + 1} ${kind.padEnd(4)} ${t.perSecond.toFixed(0).padStart(6)}/s ${t.perCpuSecond.toFixed(0).padStart(6)} per CPU-second`,
        );
      }
    const mean = (list, key) => list.reduce((n, t) => n + t[key], 0) / list.length;
    const [oidcCpu, samlCpu] = [mean(totals.oidc, 'perCpuSecond'), mean(totals.saml, 'perCpuSecond')];
    console.log(
      `\nOpenID code flow  ${oidcCpu.toFixed(0)} per CPU-second (${mean(totals.oidc, 'perSecond').toFixed(0)}/s)` +
        `\nSAML SSO          ${samlCpu.toFixed(0)} per CPU-second (${mean(totals.saml, 'perSecond').toFixed(0)}/s)` +
        `\nSAML / OpenID     ${(samlCpu / oidcCpu).toFixed(2)}x per CPU-second`,
    );
  } finally {
    await stopSigil(child);
    await cleanUp(undefined, []);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
