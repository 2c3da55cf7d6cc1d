/**
 * Keeps a node's stored clients, resources, organizations, webhooks and SAML service providers
 * current: re-reads them when their version in the store changed (a change on any node, or by the
 * CLI), when a request names a client this node does not know, and periodically.
 */
import type { ClientAdmin } from '../admin/clients.js';
import type { ResourceAdmin } from '../admin/resources.js';
import type { ClientRegistry } from '../clients/registry.js';
import type { OrganizationAdmin } from '../admin/organizations.js';
import type { WebhookAdmin } from '../admin/webhooks.js';
import type { SamlServiceProviderAdmin } from '../admin/saml-service-providers.js';
import type { Store } from '../stores/types.js';
import type { UserService } from '../users/users.js';
import { DirectoryUnavailable } from '../users/directory.js';

/** What `StoredChanges` reads and reloads. */
export interface StoredChangesDeps {
  store: Pick<Store, 'clients' | 'resources' | 'organizations' | 'webhooks' | 'samlServiceProviders'>;
  clients: ClientRegistry;
  clientAdmin: Pick<ClientAdmin, 'reload'>;
  resourceAdmin: Pick<ResourceAdmin, 'reload'>;
  organizationAdmin: Pick<OrganizationAdmin, 'reload'>;
  webhookAdmin: Pick<WebhookAdmin, 'reload'>;
  samlServiceProviderAdmin: Pick<SamlServiceProviderAdmin, 'reload'>;
  users: Pick<UserService, 'findBySubject'>;
}

/**
 * The reads of the stored clients, resources and organizations of one node. They run one after another: an
 * older read that ends late (the periodic reload) never replaces a newer one (the change poll's)
 * in the registry. A version is taken as seen only once its reload succeeded, so a failed reload
 * is retried at the next check.
 */
export class StoredChanges {
  private reads: Promise<unknown> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private clientsVersion = 0;
  private resourcesVersion = 0;
  private organizationsVersion = 0;
  private webhooksVersion = 0;
  private samlServiceProvidersVersion = 0;

  constructor(private readonly deps: StoredChangesDeps) {}

  /**
   * Whether `id` is a user's subject. A directory that cannot answer names no user here: the check
   * of clients naming users must not stop the start or the reload while a directory is down.
   */
  private readonly isUserSubject = async (id: string): Promise<boolean> => {
    try {
      return (await this.deps.users.findBySubject(id)) !== undefined;
    } catch (err) {
      if (err instanceof DirectoryUnavailable) return false;
      throw err;
    }
  };

  /** Runs `read` after every read queued before it, whether they succeeded or not. */
  private inOrder(read: () => Promise<void>): Promise<void> {
    const next = this.reads.then(read, read);
    this.reads = next.catch(() => {});
    return next;
  }

  /** Re-reads the stored clients on this node now. */
  reloadClients(): Promise<void> {
    return this.inOrder(() => this.deps.clientAdmin.reload(this.deps.clients, this.isUserSubject));
  }

  /** Re-reads the stored resources and upstream providers on this node now. */
  reloadResources(): Promise<void> {
    return this.inOrder(() => this.deps.resourceAdmin.reload());
  }

  /**
   * Re-reads the stored organizations on this node now (after the providers they name: see
   * `reloadResources`).
   */
  reloadOrganizations(): Promise<void> {
    return this.inOrder(() => this.deps.organizationAdmin.reload());
  }

  /** Re-reads the stored webhooks and the disabled ones on this node now. */
  reloadWebhooks(): Promise<void> {
    return this.inOrder(() => this.deps.webhookAdmin.reload());
  }

  /** Re-reads the stored SAML service providers on this node now. */
  reloadSamlServiceProviders(): Promise<void> {
    return this.inOrder(() => this.deps.samlServiceProviderAdmin.reload());
  }

  /**
   * The first read, at start: the versions seen, then resources (a client may name a new scope, an
   * organization a new provider), then organizations, then clients.
   */
  async start(): Promise<void> {
    this.clientsVersion = await this.deps.store.clients.clientsVersion();
    this.resourcesVersion = await this.deps.store.resources.version();
    this.organizationsVersion = await this.deps.store.organizations.version();
    this.webhooksVersion = await this.deps.store.webhooks.version();
    this.samlServiceProvidersVersion = await this.deps.store.samlServiceProviders.version();
    await this.reloadWebhooks();
    await this.reloadSamlServiceProviders();
    await this.reloadResources();
    await this.reloadOrganizations();
    await this.reloadClients();
  }

  /**
   * Re-reads the stored resources, organizations and clients when their version changed;
   * resources first. Organizations are re-read after any change of the resources too: one that
   * names a provider this node did not know yet when it last read them is in force now. One such
   * check is queued at a time, and callers until it starts share it: it starts after each of them
   * asked, so a change committed before they asked is found.
   */
  check(): Promise<void> {
    this.queued ??= this.inOrder(async () => {
      this.queued = undefined;
      const { store, clients, clientAdmin, resourceAdmin, organizationAdmin } = this.deps;
      const resourcesNow = await store.resources.version();
      const resourcesChanged = resourcesNow !== this.resourcesVersion;
      if (resourcesChanged) {
        await resourceAdmin.reload();
        this.resourcesVersion = resourcesNow;
      }
      const organizationsNow = await store.organizations.version();
      if (resourcesChanged || organizationsNow !== this.organizationsVersion) {
        await organizationAdmin.reload();
        this.organizationsVersion = organizationsNow;
      }
      const version = await store.clients.clientsVersion();
      if (version !== this.clientsVersion) {
        await clientAdmin.reload(clients, this.isUserSubject);
        this.clientsVersion = version;
      }
      const webhooksNow = await store.webhooks.version();
      if (webhooksNow !== this.webhooksVersion) {
        await this.deps.webhookAdmin.reload();
        this.webhooksVersion = webhooksNow;
      }
      const samlNow = await store.samlServiceProviders.version();
      if (samlNow !== this.samlServiceProvidersVersion) {
        await this.deps.samlServiceProviderAdmin.reload();
        this.samlServiceProvidersVersion = samlNow;
      }
    });
    return this.queued;
  }
}
