/**
 * SAML service provider administration (DESIGN §6b "SAML 2.0 identity provider"): the one door to
 * the stored SPs, for /admin/v1/saml-service-providers and the console.
 *
 * - A stored SP takes the fields of a config file's `samlServiceProviders` entry, checked by the
 *   same schema, and its metadata is read as the config file's is (`serviceProviderOf`): what
 *   starts from the config file is accepted here and the reverse. `metadataXml` alone is enough:
 *   its EntityDescriptor names the entity ID, and the ACS, SLO and certificates come from it.
 * - `metadataUrl` is fetched once, when a create or change names it, under the SSRF guard
 *   (http/outbound.ts: https only, no special-use address, loopback only where the guarded fetches
 *   allow it, bounded in size and time), and stored as `metadataXml`; the URL itself is not kept.
 *   A refresh is a change naming it again. A config-file SP's `metadataUrl` is fetched by the same
 *   code, once at start (`withFetchedMetadata`).
 * - A config-file SP is read-only (409), and no stored SP can take its entity ID.
 * - Every change is in force on this node when the call returns (`reload`), on the others within
 *   about a second (the store's `saml_service_providers` change counter, polled by
 *   `compose/changes.ts`).
 */
import type { Logger } from 'pino';
import * as z from 'zod';
import { ConfigError } from '../config/loader.js';
import type { SamlServiceProviderConfig } from '../config/schema.js';
import { MAX_ENTITY_ID_LENGTH, MAX_SP_METADATA_LENGTH, samlServiceProvider } from '../config/schema/saml.js';
import { guardedGet, OutboundRefused } from '../http/outbound.js';
import { applyMergePatch } from '../protocol/merge-patch.js';
import { entityIdOfMetadata } from '../saml/metadata-entity.js';
import { type ServiceProvider, type ServiceProviders, serviceProviderOf } from '../saml/service-providers.js';
import { XmlRefused } from '../saml/xml.js';
import type { StoredSamlServiceProvider } from '../stores/sql-saml-service-providers.js';
import type { Store } from '../stores/types.js';
import { AdminError, etagOf, ifMatchHolds, invalidField, isJsonObject, parseOrRefuse } from './errors.js';

/** The longest wait for a `metadataUrl`, milliseconds. */
export const METADATA_FETCH_TIMEOUT_MS = 5_000;

/** What the SP's metadata and settings put in force: where assertions and logouts go, how many signing certificates. */
export interface SamlServiceProviderEffect {
  acsUrls: string[];
  sloUrl: string | null;
  /** The signing certificates its metadata gives (its requests' signatures are checked with them). */
  signingCertificates: number;
  signAssertion: boolean;
  requireSignedAuthnRequests: boolean;
}

/** An SP as the management API shows it: its settings, where it comes from, what is in force, its ETag. */
export type SamlServiceProviderView = SamlServiceProviderConfig & {
  source: 'config' | 'store';
  effective: SamlServiceProviderEffect;
  etag: string;
};

/** What `SamlServiceProviderAdmin` works with. */
export interface SamlServiceProviderAdminOptions {
  /** The SPs in force on this node (the SSO endpoints' registry), which `reload` fills. */
  live: ServiceProviders;
  /** The config file's `samlServiceProviders`. */
  configured: readonly SamlServiceProviderConfig[];
  /** The guarded fetch of `metadataUrl` may reach loopback addresses (development and tests). */
  allowLoopback: boolean;
  /** Whether an organization of that name is in force (config-file or stored), which an SP's `organization` must name. */
  organizationExists: (name: string) => boolean;
  log: Pick<Logger, 'error'>;
}

/** Lists, creates, changes and deletes SAML service providers. */
export class SamlServiceProviderAdmin {
  private reloading: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Pick<Store, 'samlServiceProviders'>,
    private readonly options: SamlServiceProviderAdminOptions,
  ) {}

  /** Every SP: the config file's, then the stored ones by entity ID. */
  async list(): Promise<SamlServiceProviderView[]> {
    const stored = await this.store.samlServiceProviders.list();
    return [
      ...this.options.configured.map(configView),
      ...stored.flatMap((s) => {
        const view = this.orLogged(s, storedView);
        return view ? [view] : [];
      }),
    ];
  }

  /** One SP by its entity ID. @throws AdminError `not_found`. */
  async get(entityId: string): Promise<SamlServiceProviderView> {
    const configured = this.configured(entityId);
    if (configured) return configView(configured);
    const view = this.orLogged(await this.stored(entityId), storedView);
    if (!view)
      throw new AdminError('not_found', `SAML service provider "${entityId}" is stored with settings refused now`);
    return view;
  }

  /**
   * Creates a stored SP from a `samlServiceProviders` entry; `entityId` may be left to
   * `metadataXml`, which `metadataUrl` may fetch.
   * @throws AdminError `invalid` (with each problem's field), `conflict` for an entity ID taken
   *   (in the config file or the store).
   */
  async create(body: unknown): Promise<SamlServiceProviderView> {
    if (!isJsonObject(body)) throw invalidField('', 'a service provider must be a JSON object');
    const settings = this.checked(await this.withMetadata(body));
    if (this.options.live.isConfigured(settings.entityId)) throw exists(settings.entityId);
    if (!(await this.store.samlServiceProviders.add(settings.entityId, settings))) throw exists(settings.entityId);
    await this.reload();
    return this.get(settings.entityId);
  }

  /**
   * Changes a stored SP by a JSON Merge Patch (RFC 7396) of its settings, if it is at the version
   * `ifMatch` names; `metadataUrl` fetches its metadata again.
   * @returns the new version and the names of the settings that changed.
   * @throws AdminError `read_only`, `not_found`, `precondition_failed`, `invalid`.
   */
  async update(
    entityId: string,
    patch: unknown,
    ifMatch: string,
  ): Promise<{ view: SamlServiceProviderView; changed: string[] }> {
    if (this.configured(entityId)) throw readOnly(entityId);
    const stored = await this.stored(entityId);
    if (!ifMatchHolds(ifMatch, storedEtag(stored))) throw changedMeanwhile(entityId);
    if (!isJsonObject(patch)) throw invalidField('', 'a merge patch of a service provider must be a JSON object');
    if ('entityId' in patch && patch.entityId !== entityId)
      throw invalidField('entityId', 'an entity ID cannot change');
    // The entity ID stays: new metadata of another entity is refused, not taken as a rename.
    const merged = applyMergePatch(stored.settings, await this.withMetadata({ ...patch, entityId }));
    const next = this.checked(merged as Record<string, unknown>);
    const changed = Object.keys({ ...stored.settings, ...next }).filter(
      (k) =>
        JSON.stringify((stored.settings as Record<string, unknown>)[k]) !==
        JSON.stringify((next as Record<string, unknown>)[k]),
    );
    if (changed.length > 0 && !(await this.store.samlServiceProviders.update(entityId, stored.version, next)))
      throw changedMeanwhile(entityId);
    await this.reload();
    return { view: await this.get(entityId), changed };
  }

  /** Deletes a stored SP. @throws AdminError `read_only`, `not_found`, `precondition_failed`. */
  async delete(entityId: string, ifMatch: string | undefined): Promise<void> {
    if (this.configured(entityId)) throw readOnly(entityId);
    const stored = await this.stored(entityId);
    if (
      !ifMatchHolds(ifMatch, storedEtag(stored)) ||
      !(await this.store.samlServiceProviders.remove(entityId, stored.version))
    )
      throw changedMeanwhile(entityId);
    await this.reload();
  }

  /** Re-reads the stored SPs into the registry the SSO endpoints read. */
  reload(): Promise<void> {
    const run = this.reloading.then(() => this.load());
    this.reloading = run.catch(() => {});
    return run;
  }

  private async load(): Promise<void> {
    const inForce: ServiceProvider[] = [];
    for (const s of await this.store.samlServiceProviders.list()) {
      const sp = this.orLogged(s, inForceOf);
      if (sp) inForce.push(sp.sp);
    }
    this.options.live.setStored(inForce);
  }

  /**
   * `read(s)`, or undefined when it throws: settings stored by an earlier version that this one
   * refuses leave that SP out (logged), never the others nor the answer.
   */
  private orLogged<T>(s: StoredSamlServiceProvider, read: (s: StoredSamlServiceProvider) => T): T | undefined {
    try {
      return read(s);
    } catch (err) {
      this.options.log.error(
        { entityId: s.entityId, err: (err as Error).message },
        'stored SAML service provider ignored: its settings are refused',
      );
      return undefined;
    }
  }

  /**
   * The input with `metadataUrl` fetched into `metadataXml`, and `entityId` read from
   * `metadataXml` when absent.
   * @throws AdminError `invalid` (fields `metadataUrl`, `metadataXml`).
   */
  private async withMetadata(input: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { metadataUrl, ...rest } = input;
    let out: Record<string, unknown> = rest;
    if (metadataUrl !== undefined && metadataUrl !== null) {
      if (rest.metadataXml !== undefined && rest.metadataXml !== null)
        throw invalidField('metadataUrl', 'give metadataXml or metadataUrl, not both');
      out = { ...rest, metadataXml: await this.fetchMetadata(metadataUrl) };
    }
    if (out.entityId === undefined && typeof out.metadataXml === 'string')
      try {
        out = { entityId: entityIdOfMetadata(out.metadataXml), ...out };
      } catch (err) {
        if (!(err instanceof XmlRefused)) throw err;
        throw invalidField('metadataXml', err.message);
      }
    return out;
  }

  /**
   * The metadata at `url`, fetched once under the SSRF guard (`fetchServiceProviderMetadata`).
   * @throws AdminError `invalid` (field `metadataUrl`) for a URL that is not https (http on
   *   loopback where allowed), a fetch refused or failed, a document larger than
   *   `MAX_SP_METADATA_LENGTH` or not UTF-8.
   */
  private async fetchMetadata(value: unknown): Promise<string> {
    const url = parseOrRefuse(z.strictObject({ metadataUrl: samlServiceProvider.shape.metadataUrl }), {
      metadataUrl: value,
    }).metadataUrl as string;
    try {
      return await fetchServiceProviderMetadata(url, this.options.allowLoopback);
    } catch (err) {
      if (err instanceof MetadataNotFetched) throw invalidField('metadataUrl', err.message);
      throw err;
    }
  }

  /**
   * The settings checked as the config file's are, its organization one in force, and its metadata read.
   * @throws AdminError `invalid` with each problem's field.
   */
  private checked(input: Record<string, unknown>): SamlServiceProviderConfig {
    // An entity ID the store could not hold (PostgreSQL refuses a NUL in text) is refused as input.
    if (typeof input.entityId === 'string' && /[\u0000-\u001f\u007f]/.test(input.entityId))
      throw invalidField('entityId', 'control characters are not allowed');
    const settings = parseOrRefuse(samlServiceProvider, input);
    if (settings.organization !== null && !this.options.organizationExists(settings.organization))
      throw invalidField('organization', `unknown organization "${settings.organization}"`);
    try {
      serviceProviderOf(settings);
    } catch (err) {
      if (!(err instanceof XmlRefused)) throw err;
      throw invalidField(settings.metadataXml === undefined ? 'acsUrls' : 'metadataXml', err.message);
    }
    return settings;
  }

  private configured(entityId: string): SamlServiceProviderConfig | undefined {
    return this.options.configured.find((sp) => sp.entityId === entityId);
  }

  /** @throws AdminError `not_found`. */
  private async stored(entityId: string): Promise<StoredSamlServiceProvider> {
    // An entity ID no SP can have (a NUL, which PostgreSQL refuses, among them) asks the store nothing.
    const plausible =
      entityId.length > 0 && entityId.length <= MAX_ENTITY_ID_LENGTH && !/[\u0000-\u001f\u007f]/.test(entityId);
    const stored = plausible ? await this.store.samlServiceProviders.get(entityId) : undefined;
    if (!stored) throw new AdminError('not_found', `no SAML service provider "${entityId}"`);
    return stored;
  }
}

/** An SP's metadata could not be fetched; the message says why, without the URL. */
export class MetadataNotFetched extends Error {}

/**
 * An SP's metadata at `url` (https, or http on loopback where allowed), fetched once under the
 * SSRF guard (http/outbound.ts: no special-use address, loopback only with `allowLoopback`, at
 * most `METADATA_FETCH_TIMEOUT_MS` and `MAX_SP_METADATA_LENGTH` bytes, no redirects): the one
 * fetcher of SP metadata, for the admin API and the config file alike.
 * @throws MetadataNotFetched when the fetch is refused or fails, or the document is not UTF-8.
 */
export async function fetchServiceProviderMetadata(url: string, allowLoopback: boolean): Promise<string> {
  try {
    const { body } = await guardedGet(
      new URL(url),
      'application/samlmetadata+xml, application/xml;q=0.9, text/xml;q=0.8',
      { timeoutMs: METADATA_FETCH_TIMEOUT_MS, maxBytes: MAX_SP_METADATA_LENGTH, allowLoopback },
    );
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch (err) {
    if (err instanceof OutboundRefused) throw new MetadataNotFetched(`the metadata was not fetched: ${err.message}`);
    if (err instanceof TypeError) throw new MetadataNotFetched('the metadata is not UTF-8 text');
    throw err;
  }
}

/**
 * The config file's SPs with each `metadataUrl` fetched (once, at start, by
 * `fetchServiceProviderMetadata`) into `metadataXml`, as a stored SP's is; the URL is not kept.
 * @throws ConfigError naming each SP whose metadata was not fetched
 *   (`samlServiceProviders[i].metadataUrl`), its URL and why: nothing is started without it.
 */
export async function withFetchedMetadata(
  configured: readonly SamlServiceProviderConfig[],
  allowLoopback: boolean,
): Promise<SamlServiceProviderConfig[]> {
  const problems: string[] = [];
  const fetched = await Promise.all(
    configured.map(async ({ metadataUrl, ...sp }, i) => {
      if (metadataUrl === undefined) return sp;
      try {
        return { ...sp, metadataXml: await fetchServiceProviderMetadata(metadataUrl, allowLoopback) };
      } catch (err) {
        if (!(err instanceof MetadataNotFetched)) throw err;
        problems.push(`samlServiceProviders[${i}].metadataUrl: ${metadataUrl}: ${err.message}`);
        return sp;
      }
    }),
  );
  if (problems.length > 0) throw new ConfigError(problems);
  return fetched;
}

/**
 * The SOAP single logout endpoints (`ServiceProvider.soapSloUrl`) of the SPs in force, by entity
 * ID, read without a running node (the command line's one-off logout service, whose queued SOAP
 * LogoutRequests the running nodes send): the config file's SPs, then the stored ones of other
 * entity IDs. An SP whose settings are refused here is left out, as a node's registry leaves it
 * (a config-file SP known by a `metadataUrl` alone among them: its metadata is fetched at start only).
 */
export async function soapLogoutEndpoints(
  configured: readonly SamlServiceProviderConfig[],
  store: Pick<Store, 'samlServiceProviders'>,
): Promise<Map<string, string>> {
  const endpoints = new Map<string, string>();
  const read = (settings: () => SamlServiceProviderConfig) => {
    try {
      return serviceProviderOf(settings());
    } catch {
      return undefined;
    }
  };
  const known = new Set(configured.map((sp) => sp.entityId));
  const sps = [
    ...configured.map((sp) => read(() => sp)),
    ...(await store.samlServiceProviders.list())
      .filter((s) => !known.has(s.entityId))
      .map((s) => read(() => samlServiceProvider.parse(s.settings))),
  ];
  for (const sp of sps) if (sp?.soapSloUrl) endpoints.set(sp.entityId, sp.soapSloUrl);
  return endpoints;
}

/** A stored SP's settings (defaults filled) and the SP they put in force. @throws Error when refused now. */
function inForceOf(s: StoredSamlServiceProvider): { settings: SamlServiceProviderConfig; sp: ServiceProvider } {
  const settings = samlServiceProvider.parse(s.settings);
  return { settings, sp: serviceProviderOf(settings) };
}

function effectOf(sp: ServiceProvider): SamlServiceProviderEffect {
  return {
    acsUrls: sp.acsUrls,
    sloUrl: sp.sloUrl,
    signingCertificates: sp.certificates.length,
    signAssertion: sp.signAssertion,
    requireSignedAuthnRequests: sp.requireSignedAuthnRequests,
  };
}

function configView(settings: SamlServiceProviderConfig): SamlServiceProviderView {
  return {
    ...settings,
    source: 'config',
    effective: effectOf(serviceProviderOf(settings)),
    etag: etagOf(JSON.stringify(settings)),
  };
}

function storedView(s: StoredSamlServiceProvider): SamlServiceProviderView {
  const { settings, sp } = inForceOf(s);
  return {
    ...settings,
    source: 'store',
    effective: effectOf(sp),
    etag: storedEtag(s),
  };
}

/** A stored SP's ETag; its created-at makes an ETag of a deleted SP never match a later one of that entity ID. */
function storedEtag(s: StoredSamlServiceProvider): string {
  return etagOf(`${s.entityId}.${s.createdAt}.${s.version}`);
}

function exists(entityId: string): AdminError {
  return new AdminError('conflict', `SAML service provider "${entityId}" exists already`, 'entityId');
}

function readOnly(entityId: string): AdminError {
  return new AdminError(
    'read_only',
    `SAML service provider "${entityId}" is defined in the config file, which is read-only`,
  );
}

function changedMeanwhile(entityId: string): AdminError {
  return new AdminError(
    'precondition_failed',
    `SAML service provider "${entityId}" is not at the version If-Match names`,
  );
}
