/**
 * The stored resources as items: the kinds and how messages name them, the saved JSON of an item
 * and its view, and the reading of every stored item into the lists in force (checked together
 * with the config file, sealed provider secrets opened). `ResourceAdmin` (admin/resources.ts)
 * writes the items; this module reads them.
 */
import type { Logger } from 'pino';
import { ConfigError, type ConfigOverrides, type ResolvedConfig, resolveConfig } from '../config/loader.js';
import {
  type ApiResource,
  type ApiScope,
  type IdentityProviderConfig,
  type IdentityResource,
  MANAGEMENT_RESOURCE,
  MANAGEMENT_SCOPES,
} from '../config/schema.js';
import { type RetiringSecret, splitStoredClient } from '../clients/stored-clients.js';
import { openJson } from '../keys/keys.js';
import { OFFLINE_ACCESS } from '../resources/scopes.js';
import type { ManagedItem, ManagedKind } from '../stores/managed-resources.js';
import { etagOf } from './errors.js';

/** What the reading of the stored items checks them against. */
export interface ResourceCheckOptions {
  /** The resolved config; its resources are the read-only config-file ones. */
  config: ResolvedConfig;
  /** The config as read (before resolving): a stored item is checked together with it. */
  raw: unknown;
  /** The overrides (flags, environment) `config` was resolved with. */
  overrides?: ConfigOverrides;
  /** The registered extension grants' names, which the config's clients may list. */
  extensionGrants?: readonly string[];
  /** Where the reading warns of stored items it skips. */
  log: Logger;
  /** The data key (`SIGIL_DATA_KEY`, 32 bytes): when given, providers' client secrets are stored sealed under it. */
  dataKey?: Uint8Array;
}

/** The config file's field of each kind, and how messages name an item of it. */
export const KINDS = {
  identity_resource: { field: 'identityResources', label: 'identity resource' },
  api_scope: { field: 'apiScopes', label: 'API scope' },
  api_resource: { field: 'apiResources', label: 'API resource' },
  identity_provider: { field: 'identityProviders', label: 'identity provider' },
} as const satisfies Record<ManagedKind, { field: string; label: string }>;

/** The config file's field names of the managed kinds. */
export type Field = (typeof KINDS)[ManagedKind]['field'];

/** Valid stored items of every kind, defaults filled in, as the config file's entries. */
export interface StoredResources {
  identityResources: IdentityResource[];
  apiScopes: ApiScope[];
  apiResources: ApiResource[];
  identityProviders: IdentityProviderConfig[];
}

export const NONE: StoredResources = { identityResources: [], apiScopes: [], apiResources: [], identityProviders: [] };

/** One item as the management API shows it: never a secret nor a secret's digest. */
export interface ResourceView {
  /**
   * The item's settings as in the config file's entry, without `secrets` (API resources) and `clientSecret`
   * (providers).
   */
  settings: Record<string, unknown>;
  source: 'config' | 'store' | 'built-in';
  /** The strong ETag of this version (RFC 9110 §8.8.3), quotes included. */
  etag: string;
  /** API resources: when each secret replaced by a rotation stops working, Unix seconds, soonest first. */
  retiringSecretsExpireAt?: number[];
}

/** A stored item's saved JSON text and what it holds. */
export interface SavedItem {
  text: string;
  /** Its settings, without a sealed client secret (providers). */
  settings: Record<string, unknown>;
  retiringSecrets: RetiringSecret[];
  /** A provider's `clientSecret` as `sealJson` sealed it under the data key. */
  sealedClientSecret?: string;
}

/**
 * The stored member holding a provider's sealed `clientSecret` (a compact JWE, `sealJson`) in
 * place of `clientSecret`: a separate name, so a clear secret stored without a data key is never
 * taken for a sealed one.
 */
export const SEALED_CLIENT_SECRET = 'sealedClientSecret';

/** What a provider's client secret is called in the errors of `openJson`. */
const CLIENT_SECRETS = "stored identity providers' client secrets";

/** Reads a stored item's JSON text (`ManagedItem.config`) into what it holds. */
export function parseSaved(text: string): SavedItem {
  const { config, retiringSecrets } = splitStoredClient(JSON.parse(text) as Record<string, unknown>);
  const { [SEALED_CLIENT_SECRET]: sealed, ...settings } = config;
  return { text, settings, retiringSecrets, ...(typeof sealed === 'string' ? { sealedClientSecret: sealed } : {}) };
}

/** Names a kind's stored items can never take: Sigil's built-in scopes and its management API. */
export function builtIn(kind: ManagedKind, name: string): boolean {
  const scopes: readonly string[] = [...MANAGEMENT_SCOPES, OFFLINE_ACCESS, 'openid'];
  if (kind === 'identity_resource' || kind === 'api_scope') return scopes.includes(name);
  return kind === 'api_resource' && name === MANAGEMENT_RESOURCE;
}

/** An item as the management API shows it (`ResourceView`). */
export function view(
  kind: ManagedKind,
  settings: Record<string, unknown>,
  source: ResourceView['source'],
  text: string,
  retiring: RetiringSecret[] = [],
): ResourceView {
  const { secrets: _secrets, clientSecret: _clientSecret, ...shown } = settings;
  return {
    settings: shown,
    source,
    etag: etagOf(text),
    ...(kind === 'api_resource'
      ? { retiringSecretsExpireAt: retiring.map((r) => r.expiresAt).sort((a, b) => a - b) }
      : {}),
  };
}

/** `raw` with the config file's resources (defaults filled in) and then `stored` in each kind's list. */
export function mergedConfig(
  raw: Record<string, unknown>,
  config: ResolvedConfig,
  stored: StoredResources,
): Record<string, unknown> {
  return {
    ...raw,
    identityResources: [...config.identityResources, ...stored.identityResources],
    apiScopes: [...config.apiScopes, ...stored.apiScopes],
    apiResources: [...config.apiResources, ...stored.apiResources],
    identityProviders: [...config.identityProviders, ...stored.identityProviders],
  };
}

/**
 * The stored items that pass the config check together with the config file, defaults filled
 * in, and the API resources' retiring secrets. Items named in a problem are dropped (and
 * logged) until the rest passes. `inConfig` tells a name the config file holds (such an item is
 * ignored).
 */
export function effectiveItems(
  items: readonly ManagedItem[],
  options: ResourceCheckOptions,
  inConfig: (kind: ManagedKind, name: string) => boolean,
): { lists: StoredResources; retiring: Map<string, RetiringSecret[]>; sealed: Map<string, string> } {
  const { config, log } = options;
  const retiring = new Map<string, RetiringSecret[]>();
  const sealed = new Map<string, string>();
  let lists: StoredResources = { identityResources: [], apiScopes: [], apiResources: [], identityProviders: [] };
  for (const item of items) {
    const field = KINDS[item.kind]?.field;
    if (field === undefined) continue;
    const { settings, retiringSecrets, sealedClientSecret } = parseSaved(item.config);
    if (inConfig(item.kind, item.name) || builtIn(item.kind, item.name)) {
      log.warn(
        { kind: item.kind, name: item.name },
        'a stored resource has the name of a config-file or built-in one: it is ignored',
      );
      continue;
    }
    (lists[field] as unknown[]).push(settings);
    if (retiringSecrets.length > 0) retiring.set(item.name, retiringSecrets);
    if (item.kind === 'identity_provider' && sealedClientSecret !== undefined)
      sealed.set(item.name, sealedClientSecret);
  }
  for (let attempt = 0; attempt <= items.length; attempt++) {
    try {
      const resolved = resolveConfig(
        mergedConfig(options.raw as Record<string, unknown>, config, lists),
        options.overrides,
        { extensionGrants: options.extensionGrants ?? [] },
      );
      const own = <F extends Field>(field: F) => resolved[field].slice(config[field].length) as StoredResources[F];
      return {
        lists: {
          identityResources: own('identityResources'),
          apiScopes: own('apiScopes'),
          apiResources: own('apiResources'),
          identityProviders: own('identityProviders'),
        },
        retiring,
        sealed,
      };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const bad = new Set<string>();
      for (const p of err.problems) {
        const at = /^(identityResources|apiScopes|apiResources|identityProviders)\[(\d+)\]/.exec(p);
        const field = at?.[1] as Field | undefined;
        if (field !== undefined && Number(at?.[2]) >= config[field].length)
          bad.add(`${field}[${Number(at?.[2]) - config[field].length}]`);
      }
      if (bad.size === 0) {
        log.error(
          { problems: err.problems },
          'the stored resources do not pass the config check together with the config file: none is used',
        );
        return { lists: NONE, retiring: new Map(), sealed: new Map() };
      }
      const next: StoredResources = { identityResources: [], apiScopes: [], apiResources: [], identityProviders: [] };
      for (const field of Object.keys(next) as Field[])
        (next[field] as unknown[]) = (lists[field] as { name: string }[]).filter((item, i) => {
          if (!bad.has(`${field}[${i}]`)) return true;
          log.warn(
            { field, name: item.name, problems: err.problems },
            'stored resource ignored: invalid together with the config file',
          );
          return false;
        });
      lists = next;
    }
  }
  return { lists: NONE, retiring: new Map(), sealed: new Map() };
}

/**
 * The providers with their sealed client secrets opened with the data key. One that cannot be
 * opened (no data key, or another one) is left out with an error logged: never used without
 * its secret.
 */
export async function openClientSecrets(
  providers: IdentityProviderConfig[],
  sealed: ReadonlyMap<string, string>,
  options: Pick<ResourceCheckOptions, 'dataKey' | 'log'>,
): Promise<IdentityProviderConfig[]> {
  const out: IdentityProviderConfig[] = [];
  for (const p of providers) {
    const secret = sealed.get(p.name);
    if (secret === undefined) {
      out.push(p);
      continue;
    }
    try {
      out.push({
        ...p,
        clientSecret: (JSON.parse(await openJson(secret, options.dataKey, CLIENT_SECRETS)) as { clientSecret: string })
          .clientSecret,
      });
    } catch (err) {
      options.log.error(
        { name: p.name, err: (err as Error).message },
        'stored identity provider ignored: its client secret cannot be opened',
      );
    }
  }
  return out;
}
