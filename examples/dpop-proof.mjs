#!/usr/bin/env node
// Prints a DPoP proof (RFC 9449 §4.2) for one request, made with jose, for the DPoP
// example of docs/fapi-and-dpop.md and for trying DPoP with curl:
//
//   PROOF=$(node examples/dpop-proof.mjs POST http://localhost:5000/connect/token)
//   PROOF=$(node examples/dpop-proof.mjs GET http://localhost:5000/connect/userinfo "$AT")
//
// Arguments: the HTTP method (htm), the URL (htu), and optionally the access token the request
// carries (its SHA-256 goes into ath, as userinfo asks for a bound token). Each proof has a fresh
// jti and iat = now; DPOP_NONCE, when set, goes into nonce (for a server with dpop.requireNonce).
//
// Tokens are bound to the key that signs the proof, so every run must use the same key: an ES256
// key pair kept as a private JWK in the file DPOP_KEY_FILE (default ./data/dpop-key.json, beside
// the demo's database), created on first use. Anyone holding that file can use the tokens bound
// to it: this is a demo tool, not a client's key store.
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose';

const [htm, htu, accessToken] = process.argv.slice(2);
if (!htm || !htu || !URL.canParse(htu)) {
  console.error('usage: node examples/dpop-proof.mjs METHOD URL [ACCESS_TOKEN]');
  process.exit(2);
}

const keyFile = process.env.DPOP_KEY_FILE ?? 'data/dpop-key.json';

/** The private JWK of the proof key, from keyFile, or a new ES256 key written there. */
async function loadOrCreateKey() {
  try {
    return JSON.parse(readFileSync(keyFile, 'utf8'));
  } catch (err) {
    if (err?.code !== 'ENOENT') throw err;
  }
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256' };
  mkdirSync(dirname(keyFile), { recursive: true });
  writeFileSync(keyFile, JSON.stringify(jwk), { mode: 0o600, flag: 'wx' });
  return jwk;
}

const privateJwk = await loadOrCreateKey();
// The header carries the public members only (RFC 9449 §4.2: a key with private members is refused).
const { d: _d, ...publicJwk } = privateJwk;
const claims = {
  htm,
  htu,
  jti: randomUUID(),
  ...(accessToken ? { ath: createHash('sha256').update(accessToken, 'ascii').digest('base64url') } : {}),
  ...(process.env.DPOP_NONCE ? { nonce: process.env.DPOP_NONCE } : {}),
};
const proof = await new SignJWT(claims)
  .setProtectedHeader({ alg: privateJwk.alg, typ: 'dpop+jwt', jwk: publicJwk })
  .setIssuedAt()
  .sign(await importJWK(privateJwk, privateJwk.alg));
console.log(proof);
