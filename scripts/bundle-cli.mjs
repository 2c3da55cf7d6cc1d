#!/usr/bin/env node
/**
 * The second step of `npm run build`: writes the `sigil` command, dist/cli/main.js, with its
 * imports inlined into it and its chunks (dist/cli/chunks/), so that `sigil start` starts in under
 * 500 ms and the administration commands load only what they use.
 *
 * Why: Node 20 loads ES modules one file at a time (resolve, read, compile, link), and Sigil's
 * dependencies are about a thousand files; that loading was most of the start-up time. The library
 * entry (dist/index.js, what `import 'sigil'` gives) stays as tsc wrote it, one file per module.
 *
 * Left outside the bundle and loaded from node_modules at run time:
 * - packages with native code, which find their binaries relative to their own files:
 *   better-sqlite3 and @node-rs/argon2;
 * - packages Sigil loads only when first used, so that they cost nothing at start:
 *   pg, ioredis, yaml, qrcode, @simplewebauthn/server, nodemailer (config `email`), zxcvbn-ts
 *   (the password policy, when a password is set: its word lists were a third of the bundle) and
 *   SAML's XML and certificate libraries (@xmldom/xmldom and xml-crypto, which must share one
 *   instance of xmldom; xml-encryption, only for SPs that take encrypted assertions;
 *   @peculiar/x509 with reflect-metadata);
 * - OpenTelemetry (@opentelemetry/*), loaded only when the OTEL_* variables ask for traces
 *   (src/telemetry/otel.ts imports it with import()), so that tracing off costs nothing at start.
 * A package missing from this list still works: it is bundled, and loaded at start.
 *
 * It runs after tsc, which type-checks and writes every other file; this overwrites tsc's
 * dist/cli/main.js with the bundle of src/cli/main.ts, so running it again gives the same files.
 */
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

// The chunks' names are content hashes: a new build leaves the old ones behind unless removed.
rmSync(join(ROOT, 'dist/cli/chunks'), { recursive: true, force: true });

await build({
  entryPoints: [join(ROOT, 'src/cli/main.ts')],
  outdir: join(ROOT, 'dist/cli'),
  // Split at main.ts's dynamic imports: a command loads only its own chunks (dist/cli/chunks/),
  // so `sigil --help` and `sigil users ...` do not parse the server's megabytes.
  splitting: true,
  chunkNames: 'chunks/[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: [
    'better-sqlite3',
    '@node-rs/argon2',
    'pg',
    'ioredis',
    'yaml',
    'qrcode',
    '@simplewebauthn/server',
    'nodemailer',
    '@zxcvbn-ts/*',
    '@xmldom/xmldom',
    'xml-crypto',
    'xml-encryption',
    '@peculiar/x509',
    'reflect-metadata',
    '@opentelemetry/*',
  ],
  // CommonJS dependencies call require(); an ES module has none, so the bundle makes one.
  banner: {
    js: "import { createRequire as __sigilCreateRequire } from 'node:module';\nconst require = __sigilCreateRequire(import.meta.url);",
  },
  // Stack traces name the bundle's lines; `node --enable-source-maps` maps them back to src/.
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  // Less text for V8 to parse at start (3.0 -> 1.9 MB). Identifiers keep their names, so error
  // names and class names in logs read the same as without the bundle.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
