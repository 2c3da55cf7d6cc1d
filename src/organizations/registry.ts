/**
 * The organizations in force on this node: the config file's, then the stored ones that
 * `OrganizationAdmin.reload` found valid, by name, by id, by email domain and by identity provider. The same object for
 * the server's life; each reload replaces its maps in one step, so no reader sees half of one.
 */
import { normalizeDomain, type OrganizationConfig } from '../config/schema.js';
import { configOrganization, type Organization } from './organization.js';

/** The maps of one set of organizations. */
interface Index {
  all: readonly Organization[];
  byName: ReadonlyMap<string, Organization>;
  byId: ReadonlyMap<string, Organization>;
  byDomain: ReadonlyMap<string, Organization>;
  byProvider: ReadonlyMap<string, readonly Organization[]>;
}

function indexOf(all: readonly Organization[]): Index {
  return {
    all,
    byName: new Map(all.map((o) => [o.name, o])),
    byId: new Map(all.map((o) => [o.id, o])),
    byDomain: new Map(all.flatMap((o) => o.domains.map((d) => [d, o] as const))),
    byProvider: byProvider(all),
  };
}

/** The organizations that list each identity provider, in `all`'s order. */
function byProvider(all: readonly Organization[]): Map<string, Organization[]> {
  const out = new Map<string, Organization[]>();
  for (const o of all)
    for (const p of o.identityProviders) {
      const list = out.get(p);
      if (list) list.push(o);
      else out.set(p, [o]);
    }
  return out;
}

/** The organizations in force: config-file and stored. */
export class Organizations {
  /** The config file's organizations, in its order. */
  readonly configured: readonly Organization[];
  private index: Index;

  constructor(config: readonly OrganizationConfig[]) {
    this.configured = config.map(configOrganization);
    this.index = indexOf(this.configured);
  }

  /**
   * Replaces the stored organizations in force. The caller has checked them: no name, id or
   * domain of one is another's, nor a config-file organization's.
   */
  setStored(stored: readonly Organization[]): void {
    this.index = indexOf([...this.configured, ...stored]);
  }

  /** Every organization in force: the config file's in its order, then the stored ones by name. */
  all(): readonly Organization[] {
    return this.index.all;
  }

  /** The organization named `name`, or undefined. */
  byName(name: string): Organization | undefined {
    return this.index.byName.get(name);
  }

  /** The organization whose stable id is `id`, or undefined. */
  byId(id: string): Organization | undefined {
    return this.index.byId.get(id);
  }

  /** The organizations that list the upstream identity provider `provider` (none for `local`). */
  byProvider(provider: string): readonly Organization[] {
    return this.index.byProvider.get(provider) ?? [];
  }

  /** The organization an email domain belongs to (any case, or Unicode: `normalizeDomain`), or undefined. */
  byDomain(domain: string): Organization | undefined {
    const normalized = normalizeDomain(domain);
    return normalized === undefined ? undefined : this.index.byDomain.get(normalized);
  }
}
