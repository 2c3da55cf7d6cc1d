/**
 * Loads and validates the config file: JSON or YAML, then flags and environment
 * variables on top, then the schema. Every problem is reported with the field's path.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import {
  BUILT_IN_GRANT_TYPES,
  configSchema,
  type Config,
  type ConfigInput,
  unknownOrganizations,
  withDefaultScope,
} from './schema.js';
import { closest } from './suggest.js';
import { CONSOLE_CLIENT_ID, consoleClient } from './console-client.js';

/** A config that cannot be used: `problems` name each field path and the reason. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Settings from the command line or the environment that win over the file. */
export interface ConfigOverrides {
  port?: number;
  host?: string;
  issuer?: string;
  storage?: string;
  /** The management listener's port (`metrics.port`; 0 = any free port). Ignored when `metrics` is false. */
  metricsPort?: number;
}

/**
 * Where Sigil listens unless told otherwise: this machine only, as development servers do. The
 * demo's known passwords and open registration stay off the network; a deployment names its
 * address (the container image and the systemd unit set `HOST=0.0.0.0`).
 */
export const DEFAULT_HOST = '127.0.0.1';

/** What `resolveConfig` needs besides the data. */
export interface ResolveOptions {
  /** Where `$env` references are looked up (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Names of the extension grants registered (`createSigil`'s `extensionGrants`); default none. */
  extensionGrants?: readonly string[];
  /**
   * Names of the organizations in force besides the config file's (the stored ones), which a
   * client's `organization` may name; default none (`unknownOrganizations`).
   */
  organizations?: readonly string[];
}

/** The validated config plus where the server listens. */
export interface ResolvedConfig extends Config {
  /** Absolute issuer URL without a trailing slash; every published URL derives from it. */
  issuer: string;
  port: number;
  host: string;
}

/**
 * Reads a config file: `.yaml`/`.yml` as YAML, anything else as JSON.
 * @throws ConfigError when the file cannot be read or parsed.
 */
export function readConfigFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError([`cannot read config file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`]);
  }
  const ext = extname(path).toLowerCase();
  try {
    // The YAML parser is loaded only for a YAML file, so a JSON config starts faster.
    return ext === '.yaml' || ext === '.yml'
      ? (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text)
      : JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`cannot parse ${path}: ${(err as Error).message.split('\n')[0]}`]);
  }
}

/**
 * Validates raw config data, applies overrides, fills defaults (port 5000, host `DEFAULT_HOST`
 * unless the file, a flag or `HOST` says otherwise, issuer `http://localhost:<port>`). Any string value may be written
 * as `{ "$env": "NAME" }` or `{ "$file": "/run/secrets/x" }` (see `resolveReferences`).
 * A client's grant type must be built in or one of `options.extensionGrants`.
 * @throws ConfigError listing every invalid field as `path: reason`; a value taken from a reference
 *   never appears in it.
 */
export function resolveConfig(
  raw: unknown,
  overrides: ConfigOverrides = {},
  options: ResolveOptions = {},
): ResolvedConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new ConfigError(['(root): expected an object']);
  const references = resolveReferences(raw, options.env ?? process.env);
  if (references.problems.length > 0) throw new ConfigError(references.problems);
  const merged: Record<string, unknown> = { ...(references.value as ConfigInput) };
  for (const key of ['port', 'host', 'issuer', 'storage'] as const)
    if (overrides[key] !== undefined) merged[key] = overrides[key];
  if (overrides.metricsPort !== undefined && merged.metrics !== false)
    merged.metrics = { ...(typeof merged.metrics === 'object' ? merged.metrics : {}), port: overrides.metricsPort };
  const result = configSchema.safeParse(merged);
  const grantProblems = unknownGrantTypes(merged.clients, options.extensionGrants ?? []);
  const organizationProblems = result.success
    ? unknownOrganizations(result.data, options.organizations ?? []).map(
        (p) => `${formatPath(p.path)}: ${redact(p.message, references.secrets)}`,
      )
    : [];
  if (!result.success || grantProblems.length > 0 || organizationProblems.length > 0) {
    throw new ConfigError([
      ...grantProblems.map((p) => redact(p, references.secrets)),
      ...organizationProblems,
      ...(result.error?.issues ?? []).flatMap((i) =>
        // An unknown field is reported at its own path, not at the enclosing object's.
        i.code === 'unrecognized_keys'
          ? i.keys.map((k) => `${formatPath([...i.path, k])}: unknown field`)
          : [`${formatPath(i.path)}: ${redact(i.message, references.secrets)}`],
      ),
    ]);
  }
  // A provider's default scope depends on its type, so it is filled in here rather than by the schema.
  const cfg = { ...result.data, identityProviders: result.data.identityProviders.map(withDefaultScope) };
  const port = cfg.port ?? 5000;
  const issuer = (cfg.issuer ?? `http://localhost:${port}`).replace(/\/+$/, '');
  // Access tokens for no API name `<issuer>/resources` (TokenService.accessToken): an API resource
  // of that name would see, at introspection, every client's tokens for Sigil's own userinfo.
  const ownAudience = cfg.apiResources.findIndex((r) => r.name === `${issuer}/resources`);
  if (ownAudience >= 0)
    throw new ConfigError([
      `${formatPath(['apiResources', ownAudience, 'name'])}: "${issuer}/resources" is the audience of access tokens for Sigil's own userinfo endpoint and cannot be declared`,
    ]);
  // draft-ietf-oauth-identity-assertion-authz-grant §"Cross-Domain Use": an identity provider must
  // not issue access tokens for the ID-JAGs it issued itself.
  const selfTrusted = cfg.trustedIdentityIssuers.findIndex((t) => t.issuer.replace(/\/+$/, '') === issuer);
  if (selfTrusted >= 0)
    throw new ConfigError([
      `${formatPath(['trustedIdentityIssuers', selfTrusted, 'issuer'])}: Sigil's own issuer cannot be trusted: it must not redeem the ID-JAGs it issues`,
    ]);
  if (!cfg.admin.console) return { ...cfg, issuer, port, host: cfg.host ?? DEFAULT_HOST };
  // The web console's built-in client joins the config file's clients (read-only like them).
  const taken = cfg.clients.findIndex((c) => c.clientId === CONSOLE_CLIENT_ID);
  if (taken >= 0)
    throw new ConfigError([
      `${formatPath(['clients', taken, 'clientId'])}: "${CONSOLE_CLIENT_ID}" is the web console's built-in client (admin.console false frees the id)`,
    ]);
  const clients = [
    ...cfg.clients,
    consoleClient(
      issuer,
      cfg.identityResources.some((r) => r.name === 'openid'),
    ),
  ];
  return { ...cfg, clients, issuer, port, host: cfg.host ?? DEFAULT_HOST };
}

/**
 * The path of a resolved issuer (no trailing slash), '' when it has none: `https://example.com/id`
 * → `/id`. Sigil's routes answer under it (OIDC Discovery §4), its cookies are scoped to it.
 */
export function issuerPath(issuer: string): string {
  const path = new URL(issuer).pathname;
  return path === '/' ? '' : path;
}

/** Reads the environment's overrides (`PORT`, `HOST`, `SIGIL_ISSUER`, `SIGIL_STORAGE`, `SIGIL_METRICS_PORT`). */
export function overridesFromEnv(env: NodeJS.ProcessEnv): ConfigOverrides {
  const out: ConfigOverrides = {};
  if (env.PORT) out.port = parsePort(env.PORT, 'PORT');
  if (env.HOST) out.host = env.HOST;
  if (env.SIGIL_METRICS_PORT) out.metricsPort = parsePort(env.SIGIL_METRICS_PORT, 'SIGIL_METRICS_PORT');
  if (env.SIGIL_ISSUER) out.issuer = env.SIGIL_ISSUER;
  if (env.SIGIL_STORAGE) out.storage = env.SIGIL_STORAGE;
  return out;
}

/**
 * Parses a TCP port number.
 * @throws ConfigError when it is not an integer from 0 to 65535.
 */
export function parsePort(value: string, name: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535)
    throw new ConfigError([`${name}: not a port number: ${JSON.stringify(value)}`]);
  return n;
}

/**
 * Grant type names of the config's clients that are neither built in nor registered extension
 * grants, each as `path: reason` with the closest known name ("did you mean"). Checked on the data
 * as written, so a typo is reported together with any type error elsewhere in the file.
 */
function unknownGrantTypes(clients: unknown, extensionGrants: readonly string[]): string[] {
  if (!Array.isArray(clients)) return [];
  const known = new Set<string>([...BUILT_IN_GRANT_TYPES, ...extensionGrants]);
  return clients.flatMap((client, i) => {
    const names: unknown = (client as { allowedGrantTypes?: unknown } | null)?.allowedGrantTypes;
    if (!Array.isArray(names)) return [];
    return names.flatMap((name, j) => {
      if (typeof name !== 'string' || name === '' || known.has(name)) return [];
      const near = closest(name, known);
      return [
        `${formatPath(['clients', i, 'allowedGrantTypes', j])}: unknown grant type "${name}"${near ? `; did you mean "${near}"?` : ' (neither built in nor a registered extension grant)'}`,
      ];
    });
  });
}

/** A string value that comes from outside the file: `{ "$env": NAME }` or `{ "$file": PATH }`. */
function referenceOf(value: unknown): { kind: '$env' | '$file'; name: string } | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const entries = Object.entries(value);
  if (entries.length !== 1) return undefined;
  const [kind, name] = entries[0]!;
  return (kind === '$env' || kind === '$file') && typeof name === 'string' ? { kind, name } : undefined;
}

/** Whether `value` holds a `$env` or `$file` reference at any depth. */
export function containsReference(value: unknown): boolean {
  if (referenceOf(value)) return true;
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).some(containsReference);
}

/**
 * Replaces every `{ "$env": NAME }` and `{ "$file": PATH }` in raw config data, at any depth, by
 * the variable's value or the file's content (one trailing newline dropped, as secret files often
 * end with one). An object with any other member is left for the schema to judge.
 * @returns the data with the values in place, the values taken (to keep them out of messages),
 *   and a problem naming the field path for each unset variable or unreadable file.
 */
function resolveReferences(
  raw: unknown,
  env: NodeJS.ProcessEnv,
): { value: unknown; secrets: string[]; problems: string[] } {
  const secrets: string[] = [];
  const problems: string[] = [];
  const walk = (value: unknown, path: PropertyKey[]): unknown => {
    const ref = referenceOf(value);
    if (ref?.kind === '$env') {
      const found = env[ref.name];
      if (found === undefined) problems.push(`${formatPath(path)}: environment variable ${ref.name} is not set`);
      else secrets.push(found);
      return found;
    }
    if (ref?.kind === '$file') {
      try {
        const content = readFileSync(ref.name, 'utf8').replace(/\r?\n$/, '');
        secrets.push(content);
        return content;
      } catch (err) {
        problems.push(
          `${formatPath(path)}: cannot read file ${ref.name}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
        );
        return undefined;
      }
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i]));
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
    return value;
  };
  return { value: walk(raw, []), secrets, problems };
}

/**
 * Keeps values taken from `$env`/`$file` out of a message: each such value, and each quoted part of
 * one (a rule may quote a piece of what it refuses), becomes `[secret]`. Quoted parts shorter than
 * eight characters stay: they are the rules' own words (`"sha256:"`), too short to give a secret away.
 */
function redact(message: string, secrets: string[]): string {
  const present = secrets.filter((s) => s.length > 0);
  if (present.length === 0) return message;
  let out = message.replace(/"([^"]+)"/g, (quoted, inner: string) =>
    inner.length >= 8 && present.some((s) => s.includes(inner)) ? '"[secret]"' : quoted,
  );
  for (const s of present) out = out.split(s).join('[secret]');
  return out;
}

function formatPath(path: PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}
