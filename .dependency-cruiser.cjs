/**
 * The layering rule of src/ (docs/architecture.md), checked by `npm test` through
 * `npm run check:layers` (dependency-cruiser).
 *
 * LAYERS lists the layers from the top down. A module may import modules of its own layer and of
 * any layer below it, never one above it; no two modules may import each other in a loop, type
 * imports included. A new folder must be given a layer here, else the check fails
 * (`not-in-a-layer`), so that nobody adds a room without deciding where it stands.
 */

/** [name, path pattern] from the top of the house to the ground floor. */
const LAYERS = [
  ['cli', '^src/cli/'],
  ['library entry', '^src/index\\.ts$'],
  ['composition root', '^src/compose/'],
  ['app and route table', '^src/app\\.ts$'],
  ['endpoints', '^src/endpoints/'],
  ['pages', '^src/ui/'],
  ['interaction', '^src/interaction/'],
  ['grants', '^src/grants/'],
  ['services', '^src/services\\.ts$'],
  ['application services', '^src/(admin|federation|email|scim|organizations|saml)/'],
  ['mfa', '^src/mfa/'],
  ['users', '^src/users/'],
  ['logout', '^src/logout/'],
  ['webhooks', '^src/webhooks/'],
  ['tokens', '^src/tokens/'],
  ['keys', '^src/keys/'],
  ['validation', '^src/validation/'],
  ['resources', '^src/resources/'],
  ['clients', '^src/clients/'],
  ['limits', '^src/limits/'],
  ['stores', '^src/stores/'],
  ['page kit', '^src/page-kit/'],
  ['telemetry', '^src/telemetry/'],
  ['config, events, http', '^src/(config|events|http)/'],
  ['protocol', '^src/protocol/'],
  ['crypto', '^src/crypto/'],
];

const upward = LAYERS.slice(1).map(([name, path], i) => ({
  name: `no-upward-import: ${name}`,
  comment: `${name} may not import a layer above it (${LAYERS.slice(0, i + 1).map(([n]) => n).join(', ')})`,
  severity: 'error',
  from: { path },
  to: { path: LAYERS.slice(0, i + 1).map(([, p]) => `(${p})`).join('|') },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      comment: 'modules may not import each other in a loop (type imports count too)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-in-a-layer',
      comment: 'every module of src/ belongs to a layer of LAYERS in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.map(([, p]) => `(${p})`).join('|') },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are dependencies too: a loop of types is still a loop.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
