/**
 * The configuration reference generated from the zod schema (src/config/reference.ts): the JSON
 * Schema fits the configs Sigil accepts, docs/configuration.md is up to date and
 * documents every field.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/loader.js';
import { configJsonSchema, configReference, REFERENCE_FILE } from '../../src/config/reference.js';
import { testConfig } from '../helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('configuration reference', () => {
  it(`${REFERENCE_FILE} is what npm run docs:config generates from the schema`, () => {
    const committed = readFileSync(join(ROOT, REFERENCE_FILE), 'utf8');
    expect(committed, `${REFERENCE_FILE} is stale: run npm run docs:config`).toBe(configReference());
  });

  it('gives every field a type and a description, and the defaults and spec sections the schema has', () => {
    const rows = configReference()
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(100);
    for (const row of rows) {
      const [, field, type, , description] = row.split(/(?<!\\)\|/).map((c) => c.trim());
      expect(type, field).not.toBe('');
      expect(description, field).not.toBe('');
    }
    const row = (field: string) => rows.find((r) => r.startsWith(`| \`${field}\` |`));
    expect(row('clients[].requireConsent')).toContain('| boolean | `false` |');
    expect(row('clients[].redirectUris')).toContain('RFC 6749 §3.1.2');
    expect(row('clients[].allowedGrantTypes')).toContain('| required |');
    expect(row('trustProxy')).toContain('| `false` |');
    expect(row('dpop.proofWindowSeconds')).toContain('RFC 9449 §11.1');
  });

  it('the JSON Schema accepts the configs Sigil accepts, "$schema" and secret references included, and refuses unknown fields', () => {
    const ajv = new Ajv2020({ validateFormats: false });
    ajv.addKeyword('spec');
    const validate = ajv.compile(configJsonSchema());
    const example = JSON.parse(readFileSync(join(ROOT, 'examples/sigil.json'), 'utf8')) as Record<string, unknown>;
    const withSchema = { $schema: './node_modules/sigil/dist/sigil.schema.json', ...example };
    const withReferences = {
      ...testConfig(),
      storage: { $env: 'SIGIL_STORAGE' },
      identityProviders: [
        { name: 'up', authority: 'https://up.example', clientId: 'x', clientSecret: { $file: '/run/secrets/up' } },
      ],
    };
    for (const config of [example, withSchema, testConfig(), withReferences])
      expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
    expect(resolveConfig(withSchema).issuer).toBe('http://localhost:5000');
    expect(validate({ colour: 'blue' })).toBe(false);
    expect(validate({ clients: [{ clientId: 'c', allowedGrantTypes: ['client_credentials'], secret: 'x' }] })).toBe(
      false,
    );
    expect(validate({ storage: { $env: 'X', other: 1 } })).toBe(false);
  });
});
