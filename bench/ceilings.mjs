// The ceilings a Sigil figure is measured against, each in a process of its own (one core):
//
//   node bench/ceilings.mjs sign --alg ES256 --seconds 3 [--in-flight 32]
//                                                          prints
// {"alg":"ES256","perSecond":N,"perCpuSecond":M}: compact
//                                                          JWS signatures of a typical access-token payload,
//                                                          made as Sigil makes them (dist/keys/compact-jws.js)
//   node bench/ceilings.mjs fastify --port N               a bare Fastify server: POST /token with a form body answers
//                                                          a small JSON object; prints "listening on <url>"
//   node bench/ceilings.mjs fastify --port N --sign ES256  the same, each answer carrying a new JWT signed as Sigil
//                                                          signs (the same payload as `sign`): issuance and nothing else
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { exportJWK, generateKeyPair } from 'jose';
import { compactSigner } from '../dist/keys/compact-jws.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    alg: { type: 'string', default: 'ES256' },
    seconds: { type: 'string', default: '3' },
    port: { type: 'string', default: '0' },
    'in-flight': { type: 'string', default: '32' },
    sign: { type: 'string' },
  },
});

/**
 * Signs the same kind of payload Sigil signs for `client_credentials` for `seconds`, from
 * `inFlight` loops at once as a server under load does (Sigil signs on the event loop, so they
 * take turns). Returns signatures per second of wall time and per CPU-second of this process.
 */
async function signRate(alg, seconds, inFlight) {
  const sign = await signer(alg);
  for (let i = 0; i < 200; i++) await sign(i); // warm-up
  let n = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  const cpuBefore = process.cpuUsage();
  const worker = async () => {
    while (performance.now() < end) await sign(n++);
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const cpu = process.cpuUsage(cpuBefore);
  return { perSecond: n / ((performance.now() - start) / 1000), perCpuSecond: n / ((cpu.user + cpu.system) / 1e6) };
}

/**
 * `sign(n)`: a compact JWS of the payload Sigil signs for `client_credentials`, with `jti-n`, under a new
 * `alg` key, signed by Sigil's own signer (node:crypto, synchronous; `npm run build` writes it).
 */
async function signer(alg) {
  const { privateKey } = await generateKeyPair(alg, { modulusLength: 2048, extractable: true });
  const jws = compactSigner(alg, 'k1', await exportJWK(privateKey));
  return (n) =>
    jws.sign(
      {
        iss: 'http://127.0.0.1:5000',
        exp: 1_900_000_000,
        iat: 1_800_000_000,
        nbf: 1_800_000_000,
        aud: 'api1',
        sub: 'bench-jwt',
        client_id: 'bench-jwt',
        jti: `jti-${n}`,
        scope: 'api1',
      },
      'at+jwt',
    );
}

/**
 * A Fastify server doing only what every token request needs: parse a form, answer JSON; with
 * `alg`, the answer's access token is a JWT signed for this request.
 */
async function bareFastify(port, alg) {
  const sign = alg ? await signer(alg) : undefined;
  let n = 0;
  const app = Fastify();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
    done(null, Object.fromEntries(new URLSearchParams(body))),
  );
  app.post('/token', async (request, reply) =>
    reply.header('cache-control', 'no-store').send({
      access_token: sign ? sign(n++) : 'x'.repeat(40),
      token_type: 'Bearer',
      expires_in: 3600,
      scope: request.body.scope,
    }),
  );
  const address = await app.listen({ port, host: '127.0.0.1' });
  console.log(`listening on ${address}`);
  const stop = () => void app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (positionals[0] === 'sign') {
  const alg = values.alg;
  console.log(JSON.stringify({ alg, ...(await signRate(alg, Number(values.seconds), Number(values['in-flight']))) }));
} else if (positionals[0] === 'fastify') {
  await bareFastify(Number(values.port), values.sign);
} else {
  console.error(
    'usage: node bench/ceilings.mjs sign --alg ALG --seconds S [--in-flight N] | fastify --port N [--sign ALG]',
  );
  process.exitCode = 2;
}
