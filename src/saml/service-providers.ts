/**
 * The SAML service providers in force: the config file's `samlServiceProviders`, each completed
 * from its `metadataXml` (SAML Metadata §2.4.4 SPSSODescriptor): the HTTP-POST
 * AssertionConsumerService locations (default first, then by index), the SingleLogoutService
 * (HTTP-Redirect preferred, its ResponseLocation; and the SOAP one), the signing certificates, the encryption
 * certificate (for `encryptAssertion`), and `AuthnRequestsSigned` / `WantAssertionsSigned`, which can
 * only make the settings stricter. The metadata is untrusted XML (xml.ts: bounded, no DTD).
 */
import { X509Certificate } from 'node:crypto';
import { ConfigError } from '../config/loader.js';
import { LOOPBACK } from '../config/hosts.js';
import { MAX_SP_METADATA_LENGTH, type SamlServiceProviderConfig } from '../config/schema.js';
import { isEncryptionCertificate } from './encryption.js';
import { attr, childrenNamed, NS, parseUntrusted, textOf, XmlRefused } from './xml.js';

/** The HTTP-POST binding (SAML Bindings §3.5), the only one Sigil answers an ACS with. */
export const POST_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
/** The HTTP-Redirect binding (SAML Bindings §3.4). */
export const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
/** The SOAP binding (SAML Bindings §3.2), of single logout without the browser. */
export const SOAP_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:SOAP';

/** A service provider as the SSO endpoint uses it. */
export interface ServiceProvider {
  entityId: string;
  /** Where assertions may go, matched exactly; the first is where they go when the request names none. */
  acsUrls: string[];
  /** The metadata's ACS locations by their `index` (AssertionConsumerServiceIndex, SAML Core §3.4.1). */
  acsByIndex: ReadonlyMap<number, string>;
  /** Where LogoutRequests go (SAML Profiles §4.4.3.3); null when the SP takes no single logout. */
  sloUrl: string | null;
  /** Where LogoutResponses go: the metadata's ResponseLocation, else `sloUrl` (SAML Metadata §2.2.2). */
  sloResponseUrl: string | null;
  /** The binding of `sloUrl`: HTTP-Redirect unless the metadata offers HTTP-POST only. */
  sloBinding: 'redirect' | 'post';
  /**
   * The metadata's SingleLogoutService of the SOAP binding, where a LogoutRequest goes when the
   * session ends without its browser (SAML Profiles §4.4.3.3); null when it has none.
   */
  soapSloUrl: string | null;
  /** Certificates its requests are signed with (base64 DER), from its metadata. */
  certificates: string[];
  /**
   * The certificate its assertions are encrypted to (base64 DER, an RSA key), from its metadata;
   * null when its assertions go unencrypted (`encryptAssertion` false).
   */
  encryptionCertificate: string | null;
  nameIdFormat: SamlServiceProviderConfig['nameIdFormat'];
  attributes: Readonly<Record<string, string>>;
  signResponse: boolean;
  signAssertion: boolean;
  requireSignedAuthnRequests: boolean;
  requireConsent: boolean;
  /** The name of the organization whose members alone get its assertions; null: anyone. */
  organization: string | null;
  /** What pages call it: the configured display name, else the entity ID. */
  displayName: string;
}

/** What an SP's metadata says. */
interface SpMetadata {
  acs: { location: string; index: number | undefined; isDefault: boolean }[];
  slo?: { location: string; responseLocation?: string; binding: 'redirect' | 'post' };
  soapSlo?: string;
  certificates: string[];
  /** From KeyDescriptors for encryption or of no stated use, in order. */
  encryptionCertificates: string[];
  authnRequestsSigned: boolean;
  wantAssertionsSigned: boolean;
}

/** The service providers in force, by entity ID. */
export class ServiceProviders {
  private readonly byEntityId: Map<string, ServiceProvider>;

  /**
   * @throws ConfigError naming each SP (`samlServiceProviders[i]`) whose metadata is refused or
   *   contradicts its settings.
   */
  constructor(configured: readonly SamlServiceProviderConfig[]) {
    const problems: string[] = [];
    this.byEntityId = new Map();
    for (const [i, sp] of configured.entries()) {
      try {
        this.byEntityId.set(sp.entityId, serviceProviderOf(sp));
      } catch (err) {
        if (!(err instanceof XmlRefused)) throw err;
        problems.push(`samlServiceProviders[${i}]: ${err.message}`);
      }
    }
    if (problems.length > 0) throw new ConfigError(problems);
  }

  /** The SPs managed at run time (`setStored`), by entity ID. */
  private stored = new Map<string, ServiceProvider>();

  /** The SP of that entity ID, or undefined: the config file's first, then a stored one. */
  get(entityId: string): ServiceProvider | undefined {
    return this.byEntityId.get(entityId) ?? this.stored.get(entityId);
  }

  /** Every SP: the config file's in config order, then the stored ones. */
  list(): ServiceProvider[] {
    return [...this.byEntityId.values(), ...this.stored.values()];
  }

  /** Whether the config file defines that entity ID (such an SP is read-only at run time). */
  isConfigured(entityId: string): boolean {
    return this.byEntityId.has(entityId);
  }

  /** Replaces the stored SPs in force (the SP admin's reload); one of a config-file entity ID is ignored. */
  setStored(sps: readonly ServiceProvider[]): void {
    this.stored = new Map(sps.filter((sp) => !this.byEntityId.has(sp.entityId)).map((sp) => [sp.entityId, sp]));
  }
}

/**
 * One SP from its settings and metadata.
 * @throws XmlRefused when the metadata is refused (see `readMetadata`), leaves it without an ACS
 *   URL, or without an RSA encryption certificate for `encryptAssertion`.
 */
export function serviceProviderOf(sp: SamlServiceProviderConfig): ServiceProvider {
  const meta = sp.metadataXml === undefined ? undefined : readMetadata(sp.metadataXml, sp.entityId);
  const ordered = [...(meta?.acs ?? [])].sort(
    (a, b) => Number(b.isDefault) - Number(a.isDefault) || (a.index ?? 0) - (b.index ?? 0),
  );
  const acsUrls = sp.acsUrls.length > 0 ? sp.acsUrls : ordered.map((a) => a.location);
  if (acsUrls.length === 0) throw new XmlRefused('the metadata has no HTTP-POST AssertionConsumerService');
  const acsByIndex = new Map<number, string>();
  for (const a of meta?.acs ?? []) if (a.index !== undefined) acsByIndex.set(a.index, a.location);
  return {
    entityId: sp.entityId,
    acsUrls,
    acsByIndex,
    ...sloOf(sp, meta),
    soapSloUrl: meta?.soapSlo ?? null,
    certificates: meta?.certificates ?? [],
    encryptionCertificate: sp.encryptAssertion ? encryptionCertificateOf(meta) : null,
    nameIdFormat: sp.nameIdFormat,
    attributes: sp.attributes,
    signResponse: sp.signResponse,
    // An encrypted Assertion is always signed: decrypted, it is read apart from the Response's signature.
    signAssertion: sp.signAssertion || sp.encryptAssertion || meta?.wantAssertionsSigned === true,
    requireSignedAuthnRequests: sp.requireSignedAuthnRequests || meta?.authnRequestsSigned === true,
    requireConsent: sp.requireConsent,
    organization: sp.organization,
    displayName: sp.displayName ?? sp.entityId,
  };
}

/**
 * The certificate assertions are encrypted to: the metadata's first for encryption (or of no stated use).
 * @throws XmlRefused when there is none, or it holds no RSA key.
 */
function encryptionCertificateOf(meta: SpMetadata | undefined): string {
  const [certificate] = meta?.encryptionCertificates ?? [];
  if (certificate === undefined)
    throw new XmlRefused(
      'encryptAssertion needs an encryption certificate in the metadata (a KeyDescriptor use="encryption" or without use)',
    );
  if (!isEncryptionCertificate(certificate))
    throw new XmlRefused("encryptAssertion needs an RSA key in the metadata's encryption certificate");
  return certificate;
}

/**
 * The SP's single logout endpoint: the configured `sloUrl` (HTTP-Redirect binding), else the
 * metadata's SingleLogoutService.
 */
function sloOf(
  sp: SamlServiceProviderConfig,
  meta: SpMetadata | undefined,
): Pick<ServiceProvider, 'sloUrl' | 'sloResponseUrl' | 'sloBinding'> {
  if (sp.sloUrl !== null) return { sloUrl: sp.sloUrl, sloResponseUrl: sp.sloUrl, sloBinding: 'redirect' };
  const slo = meta?.slo;
  if (!slo) return { sloUrl: null, sloResponseUrl: null, sloBinding: 'redirect' };
  return { sloUrl: slo.location, sloResponseUrl: slo.responseLocation ?? slo.location, sloBinding: slo.binding };
}

/**
 * Reads an SP's metadata: an EntityDescriptor (the root) of `entityId` with one SPSSODescriptor.
 * @throws XmlRefused when the XML is refused (xml.ts), the root is not that EntityDescriptor, an
 *   ACS or SLO location is not https (or http on loopback), or a certificate cannot be read.
 */
function readMetadata(xml: string, entityId: string): SpMetadata {
  const root = parseUntrusted(xml, MAX_SP_METADATA_LENGTH).documentElement;
  if (root.namespaceURI !== NS.metadata || root.localName !== 'EntityDescriptor')
    throw new XmlRefused('metadataXml must be an EntityDescriptor');
  if (attr(root, 'entityID') !== entityId) throw new XmlRefused('metadataXml is of another entityID');
  const [sso, ...more] = childrenNamed(root, NS.metadata, 'SPSSODescriptor');
  if (!sso || more.length > 0) throw new XmlRefused('metadataXml must have one SPSSODescriptor');
  const acs = childrenNamed(sso, NS.metadata, 'AssertionConsumerService')
    .filter((el) => attr(el, 'Binding') === POST_BINDING)
    .map((el) => {
      const index = attr(el, 'index');
      return {
        location: location(el),
        index: index !== undefined && /^\d{1,5}$/.test(index) ? Number(index) : undefined,
        isDefault: attr(el, 'isDefault') === 'true',
      };
    });
  // HTTP-Redirect first: every SP that takes front-channel logout takes it (mod_auth_mellon takes no other).
  const services = childrenNamed(sso, NS.metadata, 'SingleLogoutService');
  const slo =
    services.find((el) => attr(el, 'Binding') === REDIRECT_BINDING) ??
    services.find((el) => attr(el, 'Binding') === POST_BINDING);
  const soap = services.find((el) => attr(el, 'Binding') === SOAP_BINDING);
  return {
    acs,
    ...(soap ? { soapSlo: location(soap) } : {}),
    ...(slo
      ? {
          slo: {
            location: location(slo),
            ...(attr(slo, 'ResponseLocation') !== undefined
              ? { responseLocation: location(slo, 'ResponseLocation') }
              : {}),
            binding: attr(slo, 'Binding') === POST_BINDING ? ('post' as const) : ('redirect' as const),
          },
        }
      : {}),
    certificates: certificatesFor(sso, 'signing'),
    encryptionCertificates: certificatesFor(sso, 'encryption'),
    authnRequestsSigned: attr(sso, 'AuthnRequestsSigned') === 'true',
    wantAssertionsSigned: attr(sso, 'WantAssertionsSigned') === 'true',
  };
}

/** An endpoint's `Location` (or `ResponseLocation`): https, or http on a loopback host, as configured URLs must be. */
function location(el: Element, name = 'Location'): string {
  const value = attr(el, name) ?? '';
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK.test(url.hostname))))
    throw new XmlRefused('a metadata Location must be https (http only for loopback hosts)');
  return value;
}

/** The certificates of the KeyDescriptors for `use`, or of no stated use (SAML Metadata §2.4.1.1: both uses). */
function certificatesFor(sso: Element, use: 'signing' | 'encryption'): string[] {
  return childrenNamed(sso, NS.metadata, 'KeyDescriptor')
    .filter((kd) => (attr(kd, 'use') ?? use) === use)
    .flatMap((kd) => childrenNamed(kd, NS.dsig, 'KeyInfo'))
    .flatMap((ki) => childrenNamed(ki, NS.dsig, 'X509Data'))
    .flatMap((xd) => childrenNamed(xd, NS.dsig, 'X509Certificate'))
    .map((el) => certificate(textOf(el) ?? ''));
}

/** A certificate's base64 DER, checked to be one (node:crypto parses it). */
function certificate(base64: string): string {
  const der = base64.replace(/\s+/g, '');
  try {
    new X509Certificate(Buffer.from(der, 'base64'));
  } catch {
    throw new XmlRefused('a metadata X509Certificate cannot be read');
  }
  return der;
}
