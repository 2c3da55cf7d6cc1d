
import { ConfigError, containsReference, resolveConfig } from '../config/loader.js';
import { isManagementScope, MANAGEMENT_RESOURCE, MANAGEMENT_SCOPES } from '../config/schema.js';
import { type RetiringSecret, } from '../clients/stored-clients.js';
import { type ApiSecrets, apiSecretsOf } from '../clients/registry.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import type { UpstreamProviders } from '../federation/upstream.js';
import { sealJson } from '../keys/keys.js';
import { applyMergePatch, changedMembers } from '../protocol/merge-patch.js';
import { type Resources } from '../resources/scopes.js';
import type { ManagedKind } from '../stores/managed-resources.js';
import type { Store } from '../stores/types.js';
import { MAX_SECRET_GRACE_SECONDS } from './clients.js';
import { AdminError, etagOf, type FieldProblem, ifMatchHolds, isJsonObject, type ItemRef, problemsOfItem, storedSecret } from './errors.js';
import {
  builtIn,
  effectiveItems,
  invalidField,
  KINDS,
  mergedConfig,
  NONE,
  openClientSecrets,
  parseSaved,
  type ResourceCheckOptions,
  type ResourceView,
  type SavedItem,
  SEALED_CLIENT_SECRET,
  type StoredResources,
  view,
} from './resource-items.js';

export type { ManagedKind } from '../stores/managed-resources.js';
export type { ResourceView, StoredResources } from './resource-items.js';

/** Longest name of a stored item, in characters (the store's column). */
export const MAX_RESOURCE_NAME = 200;

/** The live state a reload replaces: one object each for the server's life (see `Resources`). */
export interface LiveResources {
  resources: Resources;
  upstream: UpstreamProviders;
  /** API resource name → its secrets (introspection callers, RFC 7662 §2.1); changed in place. */
  apiSecrets: Map<string, ApiSecrets>;
}

/** What `ResourceAdmin` works with besides the store: what the stored items are checked against, and the live state. */
export interface ResourceAdminOptions extends ResourceCheckOptions {
  live: LiveResources;
}

/** Lists, creates, changes, deletes and reloads the stored resources of every kind. */
export class ResourceAdmin {
  /** The valid stored items as last loaded (`reload`): what `withStored` adds to a config. */
  private current: StoredResources = NONE;
  /** The reload under way (or the last one), which the next waits for. */
  private reloading: Promise<void> = Promise.resolve();
  /** The config file's API resources' secrets, hashed once. */
  private readonly configSecrets: [string, ApiSecrets][];
  /** Whether the config file has an item of `kind` named `name`. */
  private readonly inConfig = (kind: ManagedKind, name: string): boolean => this.configItem(kind, name) !== undefined;

  constructor(
    private readonly store: Pick<Store, 'resources' | 'clients' | 'users'>,
    private readonly options: ResourceAdminOptions,
  ) {
    this.configSecrets = options.config.apiResources.map((r) => [r.name, apiSecretsOf(r.secrets)]);
  }

  /**
   * Every item of a kind: the built-in ones (API scopes and resources of the management API),
   * the config file's, then the stored ones in name order (also one the config file shadows).
   */
  async list(kind: ManagedKind): Promise<ResourceView[]> {
    const stored = (await this.store.resources.list()).filter((i) => i.kind === kind);
    return [
      ...this.builtIns(kind).map((s) => view(kind, s, 'built-in', JSON.stringify(s))),
      ...this.configItems(kind).map((s) => view(kind, s, 'config', JSON.stringify(s))),
      ...stored.map((i) => {
        const { settings, retiringSecrets } = parseSaved(i.config);
        return view(kind, settings, 'store', i.config, retiringSecrets);
      }),
    ];
  }

  /**
   * One item, built-in, config-file or stored.
   * @throws AdminError `not_found`.
   */
  async get(kind: ManagedKind, name: string): Promise<ResourceView> {
    const fixed = this.builtIns(kind).find((s) => s.name === name);
    if (fixed) return view(kind, fixed, 'built-in', JSON.stringify(fixed));
    const inConfig = this.configItem(kind, name);
    if (inConfig) return view(kind, inConfig, 'config', JSON.stringify(inConfig));
    const saved = await this.saved(kind, name);
    return view(kind, saved.settings, 'store', saved.text, saved.retiringSecrets);
  }

  /**
   * Creates a stored item from its settings as in the config file's entry of that kind. An API
   * resource's secret is generated (`newHandle`, 256 bits) and stored as a digest only.
   * @returns the new item and, for an API resource, its secret, which is shown this once.
   * @throws AdminError `invalid` (with `problems`) when it is not a valid entry, together with the
   *   config and the stored items, names `secrets` (API resources), or a name with a control
   *   character or over `MAX_RESOURCE_NAME`; `conflict` when the name is built in or taken (by an
   *   item of the kind, or, for scopes, by a scope of the other kind).
   */
  async create(kind: ManagedKind, body: unknown): Promise<{ view: ResourceView; secret?: string }> {
    if (!isJsonObject(body)) throw new AdminError('invalid', `the ${KINDS[kind].label} must be a JSON object`, '', [{ path: '', message: 'expected a JSON object' }]);
    if (kind === 'api_resource' && 'secrets' in body) throw invalidField('secrets', 'Sigil generates the secret; it is shown once in the response');
    const name = typeof body.name === 'string' ? body.name : '';
    // PostgreSQL refuses a NUL in text; no name needs a control character.
    if (/[\u0000-\u001f\u007f]/.test(name)) throw invalidField('name', 'control characters are not allowed');
    if (name.length > MAX_RESOURCE_NAME) throw invalidField('name', `at most ${MAX_RESOURCE_NAME} characters`);
    if (builtIn(kind, name)) throw new AdminError('conflict', `"${name}" is built into Sigil and cannot be declared`, 'name', undefined, { reason: 'built_in', item: { kind, name } });
    if (name !== '') await this.ensureFree(kind, name);
    // A provider of that name existed: its users' links (provider name, upstream sub) would pass
    // to whoever has those subs at the new one (OIDC Core §2: a sub is unique within its issuer).
    if (kind === 'identity_provider' && name !== '' && (await this.store.users.hasExternalLinks(name)))
      throw new AdminError('conflict', `users of an earlier identity provider "${name}" are linked under this name; choose another name`, 'name');
    const secret = kind === 'api_resource' ? newHandle() : undefined;
    const settings = await this.validate(kind, name, secret === undefined ? body : { ...body, secrets: [storedSecret(secret)] });
    const stored = await this.toStored(settings, []);
    if (!(await this.store.resources.add(kind, name, stored)))
      throw new AdminError('conflict', `${KINDS[kind].label} "${name}" exists already`, 'name', undefined, { reason: 'exists', item: { kind, name } });
    await this.reload();
    return { view: view(kind, settings, 'store', JSON.stringify(stored)), ...(secret === undefined ? {} : { secret }) };
  }

  /**
   * Changes a stored item by a JSON Merge Patch (RFC 7396) of its settings, if it is still the
   * version `ifMatch` names when given, and in any case the version read here (one conditional
   * UPDATE). `name` and an API resource's `secrets` cannot be patched (`rotateSecret` replaces
   * secrets); a provider's `clientSecret` can (it is never shown).
   * @returns the new version and the names of the settings that changed.
   * @throws AdminError `conflict` for a built-in item, `read_only` for a config-file one,
   *   `not_found`, `precondition_failed`, `invalid` (with `problems`).
   */
  async update(kind: ManagedKind, name: string, patch: unknown, ifMatch: string | undefined): Promise<{ view: ResourceView; changed: string[] }> {
    const saved = await this.writable(kind, name, ifMatch);
    if (!isJsonObject(patch)) throw new AdminError('invalid', `a merge patch of a ${KINDS[kind].label} must be a JSON object`, '', [{ path: '', message: 'expected a JSON object' }]);
    if ('name' in patch) throw invalidField('name', 'a name cannot change');
    if (kind === 'api_resource' && 'secrets' in patch) throw invalidField('secrets', 'secrets change by rotation only');
    // Upstream users are linked by (provider name, upstream sub) (OIDC Core §2): under another
    // issuer the same sub is another person, who must not get the linked local account.
    if (kind === 'identity_provider' && 'authority' in patch && patch.authority !== saved.settings.authority)
      throw invalidField('authority', 'users are linked by provider name and upstream subject: another authority needs a provider of another name');
    const next = await this.validate(kind, name, applyMergePatch(saved.settings, patch) as Record<string, unknown>);
    // A sealed client secret stays unless the patch sets or removes `clientSecret`.
    const sealed = 'clientSecret' in patch ? undefined : saved.sealedClientSecret;
    const changed = changedMembers(saved.settings, next);
    // A sealed secret is not among the settings compared: set or removed, it changed.
    if ('clientSecret' in patch && saved.sealedClientSecret !== undefined && !changed.includes('clientSecret')) changed.push('clientSecret');
    return { view: await this.replace(kind, name, saved, next, saved.retiringSecrets, sealed), changed };
  }

  /**
   * Replaces a stored API resource's secret by a new one; the secrets it had stay valid at
   * introspection for `graceSeconds` more (0 ends them now).
   * @param graceSeconds 0 to `MAX_SECRET_GRACE_SECONDS`
   * @returns the new version and the new secret, shown this once.
   * @throws AdminError `invalid` (field `graceSeconds`), `conflict` (built in), `read_only`, `not_found`, `precondition_failed`.
   */
  async rotateSecret(name: string, graceSeconds: number, ifMatch?: string, now = nowSeconds()): Promise<{ view: ResourceView; secret: string }> {
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_SECRET_GRACE_SECONDS)
      throw invalidField('graceSeconds', `must be a whole number of seconds from 0 to ${MAX_SECRET_GRACE_SECONDS}`);
    const saved = await this.writable('api_resource', name, ifMatch);
    const secret = newHandle();
    const current = Array.isArray(saved.settings.secrets) ? (saved.settings.secrets as string[]) : [];
    const retiring = [
      ...saved.retiringSecrets.filter((r) => r.expiresAt > now),
      ...(graceSeconds > 0 ? current.map((s) => ({ secret: s, expiresAt: now + graceSeconds })) : []),
    ];
    return { view: await this.replace('api_resource', name, saved, { ...saved.settings, secrets: [storedSecret(secret)] }, retiring), secret };
  }

  /**
   * Deletes a stored item, if it is still the version `ifMatch` names when given and nothing uses
   * it. Tokens issued before keep working until they expire; a deleted scope is no longer granted.
   * @throws AdminError `conflict` (built in, or still in use: the message names the users),
   *   `read_only`, `not_found`, `precondition_failed`.
   */
  async delete(kind: ManagedKind, name: string, ifMatch?: string): Promise<void> {
    const saved = await this.writable(kind, name, ifMatch);
    const users = await this.usersOf(kind, name);
    if (users.length > 0) {
      const named = users.slice(0, 5).map((u) => `${u.kind === 'client' || u.kind === 'user' ? u.kind : KINDS[u.kind].label} "${u.name}"`);
      throw new AdminError('conflict', `${KINDS[kind].label} "${name}" is still used by ${named.join(', ')}${users.length > 5 ? ` and ${users.length - 5} more` : ''}; remove it there first`, undefined, undefined, {
        reason: 'in_use',
        item: { kind, name },
        users: users.slice(0, 5),
      });
    }
    if (!(await this.store.resources.replaceIf(kind, name, saved.text, undefined)))
      throw new AdminError('precondition_failed', `${KINDS[kind].label} "${name}" changed meanwhile`, undefined, undefined, { reason: 'changed', item: { kind, name } });
    await this.reload();
  }

  /**
   * Re-reads the stored items into the live resources, providers and API secrets (`options.live`).
   * Each node does so when the store's `resources` counter moves (its 1 s poll) and at every
   * `signingKeys.reloadSeconds`. A stored item that no longer passes the check together with the
   * config file (the file changed since) is skipped with a warning, never half-used.
   */
  reload(): Promise<void> {
    // One at a time, each reading the store after the previous applied: a slow reload that read
    // before a change can never overwrite the state of one that read after it.
    const run = this.reloading.then(() => this.load());
    this.reloading = run.catch(() => {});
    return run;
  }

  private async load(): Promise<void> {
    const stored = effectiveItems(await this.store.resources.list(), this.options, this.inConfig);
    const providers = await openClientSecrets(stored.lists.identityProviders, stored.sealed, this.options);
    const { resources, upstream, apiSecrets } = this.options.live;
    this.current = stored.lists;
    resources.setStored(stored.lists);
    upstream.setStored(providers);
    // Replaced in one synchronous step: no request sees it half-filled.
    apiSecrets.clear();
    for (const [name, secrets] of this.configSecrets) apiSecrets.set(name, secrets);
    for (const r of stored.lists.apiResources) apiSecrets.set(r.name, apiSecretsOf(r.secrets, stored.retiring.get(r.name)));
  }

  /**
   * `raw` (a config as read) with the stored items of the last `reload` after the config file's
   * resources (defaults filled in): what a stored client is checked against, so that it may name
   * a stored scope or API resource.
   */
  withStored(raw: Record<string, unknown>): Record<string, unknown> {
    return mergedConfig(raw, this.options.config, this.current);
  }

  /**
   * A stored item's JSON as saved: its settings, a provider's `clientSecret` sealed under the data
   * key when one is set (else as given), a sealed secret kept from before (`sealed`, unless a new
   * `clientSecret` replaces it), and the retiring secrets of an API resource.
   */
  private async toStored(settings: Record<string, unknown>, retiring: RetiringSecret[], sealed?: string): Promise<Record<string, unknown>> {
    const { clientSecret, ...rest } = settings;
    const { dataKey } = this.options;
    const fresh = typeof clientSecret === 'string' && dataKey !== undefined ? await sealJson(JSON.stringify({ clientSecret }), dataKey) : undefined;
    const kept = fresh ?? (typeof clientSecret === 'string' ? undefined : sealed);
    return {
      ...(fresh === undefined ? settings : rest),
      ...(kept === undefined ? {} : { [SEALED_CLIENT_SECRET]: kept }),
      ...(retiring.length > 0 ? { retiringSecrets: retiring } : {}),
    };
  }

  /**
   * Checks an item as the config file's entry would be, together with the config and the other
   * stored items (read now), and returns it with defaults filled in.
   * @throws AdminError `invalid` with each problem's path within the item.
   */
  private async validate(kind: ManagedKind, name: string, settings: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (containsReference(settings)) throw new AdminError('invalid', 'a stored item cannot take values from $env or $file');
    // Tokens for the management scopes name `sigil` alone: no stored API may be their audience too.
    if (kind === 'api_resource' && Array.isArray(settings.scopes))
      for (const [i, scope] of settings.scopes.entries())
        if (typeof scope === 'string' && isManagementScope(scope)) throw invalidField(`scopes.${i}`, `"${scope}" is a scope of Sigil's management API, which belongs to the built-in API resource "${MANAGEMENT_RESOURCE}" only`);
    const { field } = KINDS[kind];
    const others = effectiveItems((await this.store.resources.list()).filter((i) => !(i.kind === kind && i.name === name)), this.options, this.inConfig).lists;
    const lists = { ...others, [field]: [...others[field], settings] } as StoredResources;
    const index = this.options.config[field].length + others[field].length;
    try {
      const resolved = resolveConfig(mergedConfig(this.options.raw as Record<string, unknown>, this.options.config, lists), this.options.overrides, { extensionGrants: this.options.extensionGrants ?? [] });
      return resolved[field][index] as Record<string, unknown>;
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const problems: FieldProblem[] = problemsOfItem(err.problems, `${field}[${index}]`);
      // A list-wide problem (a duplicate name) concerns the new item: the rest passed before.
      const located = problems.map((p) => (p.path === '' && p.message.startsWith(`${field}: `) ? { path: 'name', message: p.message.slice(field.length + 2) } : p));
      throw new AdminError('invalid', err.message, located[0]?.path, located);
    }
  }

  /** @throws AdminError `conflict` when an item of the kind (config or stored) or, for scopes, a scope of the other kind has `name`. */
  private async ensureFree(kind: ManagedKind, name: string): Promise<void> {
    const kinds: ManagedKind[] = kind === 'identity_resource' || kind === 'api_scope' ? ['identity_resource', 'api_scope'] : [kind];
    for (const k of kinds)
      if (this.configItem(k, name) !== undefined || (await this.store.resources.get(k, name)) !== undefined)
        throw new AdminError('conflict', `${k === kind ? KINDS[k].label : `an ${KINDS[k].label}`} "${name}" exists already`, 'name', undefined, { reason: 'exists', item: { kind: k, name } });
  }

  /** Who uses an item: API resources listing a scope, clients (config and stored) naming it. */
  private async usersOf(kind: ManagedKind, name: string): Promise<ItemRef[]> {
    const stored = await this.store.clients.listClients();
    const clients = [...this.options.config.clients, ...stored] as Record<string, unknown>[];
    const naming = (member: string): ItemRef[] =>
      clients.filter((c) => Array.isArray(c[member]) && (c[member] as unknown[]).includes(name)).map((c) => ({ kind: 'client', name: String(c.clientId) }));
    switch (kind) {
      case 'api_scope': {
        const apis = [...this.options.config.apiResources, ...effectiveItems(await this.store.resources.list(), this.options, this.inConfig).lists.apiResources];
        return [...apis.filter((r) => r.scopes.includes(name)).map((r): ItemRef => ({ kind: 'api_resource', name: r.name })), ...naming('allowedScopes')];
      }
      case 'identity_resource':
        return naming('allowedScopes');
      case 'api_resource':
        return naming('tokenExchangeSubjectAudiences');
      case 'identity_provider':
        return naming('identityProviderRestrictions');
    }
  }

  private builtIns(kind: ManagedKind): Record<string, unknown>[] {
    if (kind === 'api_scope') return MANAGEMENT_SCOPES.map((name) => ({ name, userClaims: [] }));
    if (kind === 'api_resource') return [{ name: MANAGEMENT_RESOURCE, scopes: [...MANAGEMENT_SCOPES], userClaims: [], resourceUris: [] }];
    return [];
  }

  private configItems(kind: ManagedKind): Record<string, unknown>[] {
    return this.options.config[KINDS[kind].field] as unknown as Record<string, unknown>[];
  }

  private configItem(kind: ManagedKind, name: string): Record<string, unknown> | undefined {
    return this.configItems(kind).find((i) => i.name === name);
  }

  private async saved(kind: ManagedKind, name: string): Promise<SavedItem> {
    const text = await this.store.resources.get(kind, name);
    if (text === undefined) throw new AdminError('not_found', `no ${KINDS[kind].label} "${name}"`, undefined, undefined, { reason: 'not_found', item: { kind, name } });
    return parseSaved(text);
  }

  /** The stored item to change: not built in, not a config-file one, existing, at version `ifMatch` when given. */
  private async writable(kind: ManagedKind, name: string, ifMatch: string | undefined): Promise<SavedItem> {
    const item: ItemRef = { kind, name };
    if (this.builtIns(kind).some((s) => s.name === name))
      throw new AdminError('conflict', `${KINDS[kind].label} "${name}" is built into Sigil and cannot change`, undefined, undefined, { reason: 'built_in', item });
    if (this.configItem(kind, name))
      throw new AdminError('read_only', `${KINDS[kind].label} "${name}" is managed by the config file; change it there`, undefined, undefined, { reason: 'read_only', item });
    const saved = await this.saved(kind, name);
    if (!ifMatchHolds(ifMatch, etagOf(saved.text)))
      throw new AdminError('precondition_failed', `${KINDS[kind].label} "${name}" is not at the version If-Match names`, undefined, undefined, { reason: 'changed', item });
    return saved;
  }

  private async replace(kind: ManagedKind, name: string, saved: SavedItem, settings: Record<string, unknown>, retiring: RetiringSecret[], sealed?: string): Promise<ResourceView> {
    const next = await this.toStored(settings, retiring, sealed);
    if (!(await this.store.resources.replaceIf(kind, name, saved.text, next)))
      throw new AdminError('precondition_failed', `${KINDS[kind].label} "${name}" changed meanwhile`, undefined, undefined, { reason: 'changed', item: { kind, name } });
    await this.reload();
    return view(kind, settings, 'store', JSON.stringify(next), retiring);
  }
}
