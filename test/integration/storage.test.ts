/**
 * Stored tokens are hashes only (RFC 6749 §10.4): after issuing
 * refresh, reference and JWT access tokens on a SQLite file, neither the grants table nor the raw
 * database files contain any issued token string.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTokens, passwordTokens, postForm, startSigil, tokenRequest, type TestSigil } from '../helpers.js';

describe('token storage', () => {
  let sigil: TestSigil;
  const issued: string[] = [];
  beforeAll(async () => {
    sigil = await startSigil();
    const add = (b: { access_token: string; refresh_token?: string; id_token?: string }) =>
      issued.push(b.access_token, ...[b.refresh_token, b.id_token].filter((t): t is string => t !== undefined));

    const jwtFamily = await passwordTokens(sigil, { scope: 'openid api1 offline_access' });
    add(jwtFamily);
    const rotated = await tokenRequest(
      sigil,
      { grant_type: 'refresh_token', refresh_token: jwtFamily.refresh_token! },
      ['ropc', 'ropc-secret'],
    );
    add(rotated.json());
    const refFamily = await passwordTokens(sigil, {
      client: ['ropc-ref', 'ropc-secret'],
      scope: 'openid api1 offline_access',
    });
    add(refFamily);
    add(await clientTokens(sigil, 'api1', ['m2m-ref', 'm2m-secret']));
    const cc = await clientTokens(sigil, 'api1');
    add(cc);
    // A revocation writes a row for a JWT access token that had none.
    await postForm(sigil, '/connect/revocation', { token: cc.access_token }, ['m2m', 'm2m-secret']);
    await postForm(sigil, '/connect/revocation', { token: refFamily.refresh_token! }, ['ropc-ref', 'ropc-secret']);
  });
  afterAll(async () => sigil.close());

  it('keeps only SHA-256 keys of handles in the grants table', () => {
    const db = new SQLite(join(sigil.dir, 'sigil.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT * FROM grants').all() as Record<string, unknown>[];
      expect(rows.length).toBeGreaterThanOrEqual(6);
      const dump = JSON.stringify(rows);
      for (const token of issued) {
        expect(dump).not.toContain(token);
        // No JWT part either (header.payload or signature).
        for (const part of token.split('.')) if (part.length > 30) expect(dump).not.toContain(part);
      }
      const keys = new Set(rows.map((r) => r.key));
      const handles = issued.filter((t) => !t.includes('.'));
      expect(handles.length).toBeGreaterThanOrEqual(5);
      for (const handle of handles)
        expect(keys.has(createHash('sha256').update(handle).digest('base64url'))).toBe(true);
      for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    } finally {
      db.close();
    }
  });

  it('leaves no token string anywhere in the database files (WAL included)', () => {
    const files = readdirSync(sigil.dir).filter((f) => f.startsWith('sigil.db'));
    expect(files).toContain('sigil.db');
    const bytes = Buffer.concat(files.map((f) => readFileSync(join(sigil.dir, f))));
    const text = bytes.toString('latin1');
    for (const token of issued) {
      expect(text.includes(token)).toBe(false);
      for (const part of token.split('.')) if (part.length > 30) expect(text.includes(part)).toBe(false);
    }
  });
});
