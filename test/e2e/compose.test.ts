/**
 * compose.yaml against what docs/deployment.md says of it: every service, volume and
 * Sigil setting the Docker Compose section's sentence on `compose.yaml` names is there, the storage
 * and Redis URLs point at the compose services, and Sigil waits for both to be healthy. No Docker
 * daemon runs here, so the file is read with the `yaml` package, as `docker compose` reads it.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseStorageUrl } from '../../src/stores/sql.js';

const ROOT = resolve(import.meta.dirname, '../..');

interface Service {
  build?: unknown;
  image?: string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  volumes?: string[];
}
const compose = parse(readFileSync(resolve(ROOT, 'compose.yaml'), 'utf8')) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};

/** A value with compose's `${VAR:-default}` / `${VAR:?message}` interpolations filled with `x`. */
function interpolated(value: string): string {
  return value.replace(/\$\{[^}]*\}/g, 'x');
}

describe('compose.yaml', () => {
  it('has every service, volume and Sigil setting docs/deployment.md names', () => {
    const page = readFileSync(resolve(ROOT, 'docs/deployment.md'), 'utf8');
    // The sentence of the Docker Compose section that starts with `compose.yaml`.
    const sentence = /^(\[`compose\.yaml`\]\(\.\.\/compose\.yaml\)[\s\S]*?\.)\s/m.exec(page)?.[1];
    expect(sentence).toBeTruthy();
    const named = [...sentence!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((n) => /^[\w-]+$/.test(n));
    const known = new Set([
      ...Object.keys(compose.services),
      ...Object.keys(compose.volumes),
      ...Object.keys(compose.services.sigil?.environment ?? {}),
    ]);
    expect(named.length).toBeGreaterThanOrEqual(8);
    expect(named.filter((n) => !known.has(n))).toEqual([]);
  });

  it('points Sigil at the postgres and redis services, waits for their health checks, and keeps data in named volumes', () => {
    const { sigil, postgres, redis } = compose.services;
    expect(sigil?.build).toBe('.');
    const env = sigil!.environment!;
    const storage = parseStorageUrl(interpolated(env.SIGIL_STORAGE!));
    expect(storage.kind).toBe('postgres');
    expect(storage.kind === 'postgres' && new URL(storage.connectionString).host).toBe('postgres:5432');
    expect(new URL(env.SIGIL_REDIS_URL!).host).toBe('redis:6379');
    // Sigil's default is 127.0.0.1; in the container it listens where the published port arrives.
    expect(env.HOST).toBe('0.0.0.0');
    // The data key and the database password come from the environment, and compose refuses to start without them.
    expect(env.SIGIL_DATA_KEY).toMatch(/^\$\{SIGIL_DATA_KEY:\?/);
    expect(env.SIGIL_STORAGE).toMatch(/\$\{POSTGRES_PASSWORD:\?/);
    for (const dependency of ['postgres', 'redis']) {
      expect(sigil!.depends_on?.[dependency]?.condition).toBe('service_healthy');
      expect(compose.services[dependency]!.healthcheck?.test.length).toBeGreaterThan(1);
    }
    // Sigil's own check is the image's HEALTHCHECK.
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/^HEALTHCHECK [^\n]*\\\n[^\n]*\/healthz/m);
    expect(sigil!.volumes).toContain('sigil-data:/var/lib/sigil');
    expect(postgres!.volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(redis!.image).toMatch(/^redis:/);
    expect(sigil!.volumes!.some((v) => v.endsWith(':/etc/sigil/sigil.json:ro'))).toBe(true);
  });
});
