/**
 * The organizations in force on this node: the config file's, then the stored ones that
 * `OrganizationAdmin.reload` found valid, by name, by id and by email domain. The same object for
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
}

function indexOf(all: readonly Organization[]): Index {
  return {
    all,
    byName: new Map(all.map((o) => [o.name, o])),
    byId: new Map(all.map((o) => [o.id, o])),
    byDomain: new Map(all.flatMap((o) => o.domains.map((d) => [d, o] as const))),
  };
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

  /** The organization an email domain belongs to (any case, or Unicode: `normalizeDomain`), or undefined. */
  byDomain(domain: string): Organization | undefined {
    const normalized = normalizeDomain(domain);
    return normalized === undefined ? undefined : this.index.byDomain.get(normalized);
  }
}
