/**
 * Loads and validates the config file (DESIGN §4, §5): JSON or YAML, then flags and environment
 * variables on top, then the schema. Every problem is reported with the field's path.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { configSchema, type Config, type ConfigInput } from './schema.js';

/** A config that cannot be used: `problems` name each field path and the reason. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Settings from the command line or the environment that win over the file (DESIGN §5). */
export interface ConfigOverrides {
  port?: number;
  host?: string;
  issuer?: string;
  storage?: string;
  /** The management listener's port (`metrics.port`; 0 = any free port). Ignored when `metrics` is false. */
  metricsPort?: number;
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
    // The YAML parser is loaded only for a YAML file (issue 13, cold start).
    return ext === '.yaml' || ext === '.yml' ? (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text) : JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`cannot parse ${path}: ${(err as Error).message.split('\n')[0]}`]);
  }
}

/**
 * Validates raw config data, applies overrides, fills defaults (port 5000, host 0.0.0.0 unless the
 * file or a flag says otherwise, issuer `http://localhost:<port>`).
 * @throws ConfigError listing every invalid field as `path: reason`.
 */
export function resolveConfig(raw: unknown, overrides: ConfigOverrides = {}): ResolvedConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new ConfigError(['(root): expected an object']);
  const merged: Record<string, unknown> = { ...(raw as ConfigInput) };
  for (const key of ['port', 'host', 'issuer', 'storage'] as const)
    if (overrides[key] !== undefined) merged[key] = overrides[key];
  if (overrides.metricsPort !== undefined && merged.metrics !== false)
    merged.metrics = { ...(typeof merged.metrics === 'object' ? merged.metrics : {}), port: overrides.metricsPort };
  const result = configSchema.safeParse(merged);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.flatMap((i) =>
        // An unknown field is reported at its own path, not at the enclosing object's.
        i.code === 'unrecognized_keys'
          ? i.keys.map((k) => `${formatPath([...i.path, k])}: unknown field`)
          : [`${formatPath(i.path)}: ${i.message}`],
      ),
    );
  }
  const cfg = result.data;
  const port = cfg.port ?? 5000;
  const issuer = (cfg.issuer ?? `http://localhost:${port}`).replace(/\/+$/, '');
  return { ...cfg, issuer, port, host: cfg.host ?? '0.0.0.0' };
}

/** Reads environment variables of DESIGN §5 (`PORT`, `SIGIL_ISSUER`, `SIGIL_STORAGE`, `SIGIL_METRICS_PORT`). */
export function overridesFromEnv(env: NodeJS.ProcessEnv): ConfigOverrides {
  const out: ConfigOverrides = {};
  if (env.PORT) out.port = parsePort(env.PORT, 'PORT');
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
  if (!/^\d+$/.test(value) || n > 65535) throw new ConfigError([`${name}: not a port number: ${JSON.stringify(value)}`]);
  return n;
}

function formatPath(path: PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
}
