/**
 * Strict-Transport-Security only over secure transport (RFC 6797 §7.2): an http issuer never
 * sends it (pages, discovery, JWKS); an https issuer sends it on the same responses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSigil, type TestSigil } from '../helpers.js';

const PATHS = ['/device', '/.well-known/openid-configuration', '/.well-known/openid-configuration/jwks'];

describe.each([
  ['http://127.0.0.1:5999', false],
  ['https://id.example', true],
])('issuer %s', (issuer, secure) => {
  let sigil: TestSigil;
  beforeAll(async () => {
    sigil = await startSigil({ issuer });
  });
  afterAll(async () => sigil?.close());

  it.each(PATHS)(`${secure ? 'sends' : 'never sends'} Strict-Transport-Security on %s`, async (url) => {
    const res = await sigil.app.inject({ method: 'GET', url });
    expect(res.statusCode).toBe(200);
    if (secure) expect(res.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
    else expect(res.headers['strict-transport-security']).toBeUndefined();
  });
});
