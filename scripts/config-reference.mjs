#!/usr/bin/env node
/**
 * Writes the configuration reference generated from the zod schema (src/config/reference.ts,
 * compiled into dist/ by tsc): dist/sigil.schema.json, the JSON Schema the package ships (a step
 * of `npm run build`), and with `--docs` also docs/configuration.md (`npm run docs:config`).
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { configJsonSchema, configReference, REFERENCE_FILE } = await import(join(ROOT, 'dist/config/reference.js'));

writeFileSync(join(ROOT, 'dist/sigil.schema.json'), `${JSON.stringify(configJsonSchema(), null, 2)}\n`);
if (process.argv.includes('--docs')) writeFileSync(join(ROOT, REFERENCE_FILE), configReference());
