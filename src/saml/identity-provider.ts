/**
 * Sigil as a SAML 2.0 identity provider (SAML Profiles §4.1, Web Browser SSO; §4.4, Single Logout):
 * its metadata, the reading of AuthnRequests (authn-request.ts) and of logout messages
 * (logout-messages.ts) with the replay check of request IDs, the Responses to registered service
 * providers (NameIDs, attributes, the authentication context, signatures), and its LogoutRequests
 * and LogoutResponses in each SP's single logout binding.
 * Which user, which session and which pages come first is the interaction layer's
 * (interaction/saml.ts); this service only speaks SAML.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { SamlConfig, SamlServiceProviderConfig } from '../config/schema.js';
import { newHandle, nowSeconds } from '../crypto/handles.js';
import type { SamlLogoutSender } from '../logout/delivery.js';
import { type KeyRing, openJson, sealJson } from '../keys/keys.js';
import type { ReplayCache } from '../limits/replay-cache.js';
import type { ServerSecretStore } from '../stores/sql-secrets.js';
import {
  type AuthnRequest,
  type BindingMessage,
  CLOCK_SKEW,
  NAME_ID_FORMATS,
  REQUEST_MAX_AGE,
  readAuthnRequest,
  SamlRefused,
} from './authn-request.js';
import type { SamlParticipation } from '../stores/types.js';
import { type MessageField, type OutgoingMessage, postMessage, redirectMessage } from './binding.js';
import {
  type LogoutRequestFacts,
  type LogoutRequestIn,
  type LogoutResponseIn,
  logoutRequestXml,
  logoutResponseXml,
  type NameIdValue,
  readLogoutRequest,
  readLogoutResponse,
} from './logout-messages.js';
import { idpMetadata } from './metadata.js';
import { AUTHN_CONTEXT, type AssertionFacts, buildResponse, newSamlId, STATUS } from './response.js';
import { type ServiceProvider, ServiceProviders } from './service-providers.js';
import { SIGNATURE_ALGORITHM_URIS, type SamlSigner, signElement } from './signatures.js';
import { exchangeSoapLogout, soapLogoutRequest } from './soap-logout.js';
import { XmlRefused } from './xml.js';

/** The SSO endpoint (SAML Profiles §4.1.3.2), below the issuer. */
export const SSO_PATH = '/saml/sso';
/** The single logout endpoint (SAML Profiles §4.4), below the issuer. */
export const SLO_PATH = '/saml/slo';
/** The name of the persistent NameIDs' key among the server secrets. */
const NAME_ID_SECRET = 'saml-persistent-nameid';

/** Where an answer goes: the SP, its ACS, the request answered (absent when IdP-initiated), RelayState. */
export interface SamlTarget {
  entityId: string;
  acsUrl: string;
  requestId?: string;
  relayState?: string;
}

/** The signed-in user an assertion is about. */
export interface SamlSubject {
  subjectId: string;
  /** Released by the profile service for this SP (`TokenService.releasedSamlClaims`). */
  claims: Readonly<Record<string, unknown>>;
  authTime: number;
  amr: readonly string[];
  sid: string;
  /** When the session ends, Unix seconds. */
  sessionExpiresAt: number;
}

/** An answer to post to the SP's ACS (SAML Bindings §3.5.4): the form's fields. */
export interface SamlAnswer {
  acsUrl: string;
  fields: { SAMLResponse: string; RelayState?: string };
  /** A success's NameID, which the SP's single logout will name (`SamlParticipation`). */
  nameId?: NameIdValue;
}

/** The identity provider's SAML side; one per instance. */
export class SamlIdentityProvider {
  readonly serviceProviders: ServiceProviders;
  private nameIdKey: Promise<Buffer> | undefined;

  /**
   * @param dataKey the key sealing secrets at rest (`SIGIL_DATA_KEY`), if any
   * @throws ConfigError when an SP's metadata is refused (`ServiceProviders`)
   */
  constructor(
    readonly config: SamlConfig,
    configured: readonly SamlServiceProviderConfig[],
    private readonly issuer: string,
    private readonly keys: KeyRing,
    private readonly secrets: ServerSecretStore,
    private readonly replay: ReplayCache,
    private readonly dataKey: Uint8Array | undefined,
  ) {
    this.serviceProviders = new ServiceProviders(configured);
  }

  /** The SSO endpoint's URL: what an AuthnRequest's Destination names. */
  get ssoUrl(): string {
    return `${this.issuer}${SSO_PATH}`;
  }

  /** The single logout endpoint's URL: what a LogoutRequest's or LogoutResponse's Destination names. */
  get sloUrl(): string {
    return `${this.issuer}${SLO_PATH}`;
  }

  /** The metadata document (SAML Metadata §2.3.2) with the certificates in force. */
  metadata(): string {
    return idpMetadata({
      entityId: this.issuer,
      ssoUrl: this.ssoUrl,
      sloUrl: this.sloUrl,
      certificates: this.keys.saml().certificates,
      wantAuthnRequestsSigned: false,
    });
  }

  /**
   * Reads and checks an AuthnRequest (authn-request.ts); nothing is stored.
   * @param now Unix seconds
   * @throws SamlRefused for every refusal.
   */
  read(message: BindingMessage, now: number): AuthnRequest {
    return readAuthnRequest(message, this.serviceProviders, this.ssoUrl, now);
  }

  /**
   * Reads and checks an SP's LogoutRequest (logout-messages.ts); nothing is stored.
   * @param now Unix seconds
   * @throws SamlRefused for every refusal.
   */
  readLogoutRequest(message: BindingMessage, now: number): LogoutRequestIn {
    return refusing(() => readLogoutRequest(message, this.serviceProviders, this.sloUrl, now));
  }

  /**
   * Reads and checks an SP's LogoutResponse (logout-messages.ts); nothing is stored.
   * @throws SamlRefused for every refusal.
   */
  readLogoutResponse(message: BindingMessage, now: number): LogoutResponseIn {
    return refusing(() => readLogoutResponse(message, this.serviceProviders, this.sloUrl, now));
  }

  /**
   * Records a checked request's ID (an AuthnRequest's or a LogoutRequest's) as used by its SP
   * (SAML Profiles §4.1.4.5): the last check, so that a refused request stores nothing.
   * Remembered for as long as its IssueInstant could let the same request in again.
   * @throws SamlRefused when the SP sent that ID before (also when two copies race: one wins).
   */
  async markUsed(request: { id: string; sp: Pick<ServiceProvider, 'entityId'> }, now: number): Promise<void> {
    const until = now + REQUEST_MAX_AGE + 2 * CLOCK_SKEW;
    if (!(await this.replay.firstUse('saml_request', request.sp.entityId, request.id, until, now)))
      throw new SamlRefused('the request was used before');
  }

  /**
   * Sigil's LogoutRequest to an SP that took part in a session (SAML Profiles §4.4.3.3), naming
   * the NameID and SessionIndex it was given, in the binding of its single logout endpoint, signed.
   * @param relayState what the SP must send back with its LogoutResponse
   * @returns the request's ID (its LogoutResponse's InResponseTo) and the message; undefined when
   *   the SP is no longer registered or takes no single logout.
   */
  logoutRequest(
    participation: SamlParticipation,
    relayState: string,
    now: number,
  ): { id: string; message: OutgoingMessage } | undefined {
    const sp = this.serviceProviders.get(participation.entityId);
    if (!sp?.sloUrl) return undefined;
    const id = newSamlId();
    const xml = logoutRequestXml(this.logoutRequestFacts(id, sp.sloUrl, participation, now));
    return { id, message: this.outgoing(sp, sp.sloUrl, 'SAMLRequest', xml, relayState) };
  }

  /**
   * Sends an SP its LogoutRequest over SOAP for a session ended without its browser (SAML Profiles
   * §4.4.3.3, soap-logout.ts), to the delivery's `uri` (its SOAP SingleLogoutService when the
   * logout was queued); the back-channel deliverer's `SamlLogoutSender`.
   * @returns the SP's Success status, or the failure (final for an SP no longer registered)
   */
  readonly soapLogout: SamlLogoutSender = async (delivery, limits) => {
    const sp = this.serviceProviders.get(delivery.saml.entityId);
    if (!sp) return { message: 'the service provider is no longer registered', final: true };
    const signer = this.signer();
    if (!signer) return { message: 'no SAML signing key', final: false };
    const id = newSamlId();
    const now = nowSeconds();
    const envelope = soapLogoutRequest(this.logoutRequestFacts(id, delivery.uri, delivery.saml, now), signer);
    return exchangeSoapLogout(delivery.uri, envelope, sp, id, limits, now);
  };

  /** What Sigil's LogoutRequest to `destination` says of a participation (the NameID as the SP was given it). */
  private logoutRequestFacts(
    id: string,
    destination: string,
    participation: SamlParticipation,
    now: number,
  ): LogoutRequestFacts {
    return {
      id,
      issuer: this.issuer,
      destination,
      nameId: {
        value: participation.nameId,
        format: participation.format,
        ...(participation.spNameQualifier !== undefined ? { spNameQualifier: participation.spNameQualifier } : {}),
      },
      sessionIndex: participation.sessionIndex,
      now,
      lifetime: this.config.assertionLifetime,
    };
  }

  /**
   * Sigil's LogoutResponse to an SP's LogoutRequest (SAML Core §3.7.2), at the SP's single logout
   * endpoint (its ResponseLocation), signed; undefined when the SP takes no single logout.
   * @param status a top-level status code (`STATUS`)
   */
  logoutResponse(
    sp: ServiceProvider,
    inResponseTo: string,
    status: string,
    relayState: string | undefined,
    now: number,
  ): OutgoingMessage | undefined {
    if (!sp.sloResponseUrl) return undefined;
    const xml = logoutResponseXml({ issuer: this.issuer, destination: sp.sloResponseUrl, inResponseTo, status, now });
    return this.outgoing(sp, sp.sloResponseUrl, 'SAMLResponse', xml, relayState);
  }

  /** A message in the SP's single logout binding, signed in the query or in the XML. */
  private outgoing(
    sp: ServiceProvider,
    location: string,
    field: MessageField,
    xml: string,
    relayState: string | undefined,
  ): OutgoingMessage {
    const signer = this.signer();
    if (!signer) throw new Error('no SAML signing key');
    if (sp.sloBinding === 'redirect') return redirectMessage(location, field, xml, relayState, signer);
    return postMessage(location, field, signElement(xml, '/*', signer), relayState);
  }

  /**
   * A successful Response with its assertion about `subject`.
   * @returns undefined when the SP's NameID cannot be made (emailAddress for a user without `email`)
   */
  async success(target: SamlTarget, subject: SamlSubject, now: number): Promise<SamlAnswer | undefined> {
    const sp = this.serviceProviders.get(target.entityId);
    if (!sp) return undefined;
    const nameId = await this.nameIdOf(sp, subject);
    if (!nameId) return undefined;
    const assertion: AssertionFacts = {
      nameId,
      authTime: subject.authTime,
      sessionIndex: subject.sid,
      sessionNotOnOrAfter: subject.sessionExpiresAt,
      authnContext: authnContextOf(subject.amr),
      attributes: attributesOf(sp, subject.claims),
    };
    return { ...(await this.answer(target, sp, { code: STATUS.success }, assertion, now)), nameId };
  }

  /**
   * A Response of another status, without an assertion (SAML Core §3.2.2.2), to a registered ACS.
   * @param status the top-level code (`STATUS.requester` or `STATUS.responder`) and a second-level one
   */
  async failure(
    target: SamlTarget,
    status: { code: string; subCode: string; message?: string },
    now: number,
  ): Promise<SamlAnswer | undefined> {
    const sp = this.serviceProviders.get(target.entityId);
    return sp && (await this.answer(target, sp, status, undefined, now));
  }

  private async answer(
    target: SamlTarget,
    sp: ServiceProvider,
    status: { code: string; subCode?: string; message?: string },
    assertion: AssertionFacts | undefined,
    now: number,
  ): Promise<SamlAnswer> {
    const xml = await buildResponse(
      {
        issuer: this.issuer,
        destination: target.acsUrl,
        audience: sp.entityId,
        ...(target.requestId !== undefined ? { inResponseTo: target.requestId } : {}),
        now,
        lifetime: this.config.assertionLifetime,
        status,
        ...(assertion ? { assertion } : {}),
        sign: { response: sp.signResponse, assertion: sp.signAssertion },
        ...(assertion && sp.encryptionCertificate ? { encryptTo: sp.encryptionCertificate } : {}),
      },
      this.signer(),
    );
    return {
      acsUrl: target.acsUrl,
      fields: {
        SAMLResponse: Buffer.from(xml, 'utf8').toString('base64'),
        ...(target.relayState !== undefined ? { RelayState: target.relayState } : {}),
      },
    };
  }

  private signer(): SamlSigner | undefined {
    const active = this.keys.saml().signer;
    return (
      active && {
        privateKey: active.privateKey,
        certificate: active.certificate,
        algorithm: SIGNATURE_ALGORITHM_URIS[this.config.signatureAlgorithm],
      }
    );
  }

  /**
   * The subject's NameID for `sp` (SAML Core §8.3): persistent, an HMAC-SHA-256 of the SP's entity
   * ID and the subject under a server secret (opaque, the same at every sign-in to that SP, another
   * at every other SP; §8.3.7); emailAddress, the `email` claim; transient, random each time;
   * unspecified, the subject id.
   */
  private async nameIdOf(sp: ServiceProvider, subject: SamlSubject): Promise<AssertionFacts['nameId'] | undefined> {
    const format = NAME_ID_FORMATS[sp.nameIdFormat];
    switch (sp.nameIdFormat) {
      case 'persistent': {
        const value = createHmac('sha256', await this.persistentKey())
          .update(`${sp.entityId}\u0000${subject.subjectId}`)
          .digest('base64url');
        return { value, format, spNameQualifier: sp.entityId };
      }
      case 'emailAddress': {
        const email = subject.claims.email;
        return typeof email === 'string' && email !== '' ? { value: email, format } : undefined;
      }
      case 'transient':
        return { value: `_${randomBytes(20).toString('hex')}`, format, spNameQualifier: sp.entityId };
      case 'unspecified':
        return { value: subject.subjectId, format };
    }
  }

  /** The persistent NameIDs' key: the server secret, created by the first node that needs it. */
  private persistentKey(): Promise<Buffer> {
    this.nameIdKey ??= (async () => {
      const created = await sealJson(JSON.stringify({ key: newHandle() }), this.dataKey);
      const stored = await this.secrets.getOrCreate(NAME_ID_SECRET, created);
      const { key } = JSON.parse(await openJson(stored, this.dataKey, 'server secrets')) as { key: string };
      return Buffer.from(key, 'base64url');
    })();
    // A failed read is tried again by the next response.
    this.nameIdKey.catch(() => {
      this.nameIdKey = undefined;
    });
    return this.nameIdKey;
  }
}

/** Runs a reader, its XmlRefused as SamlRefused (the endpoint's error page). */
function refusing<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof XmlRefused) throw new SamlRefused(err.message);
    throw err;
  }
}

/** The claims an assertion to `sp` needs: those of its attributes, and `email` for emailAddress NameIDs. */
export function claimsFor(sp: ServiceProvider): Set<string> {
  const names = new Set(Object.values(sp.attributes));
  if (sp.nameIdFormat === 'emailAddress') names.add('email');
  return names;
}

/**
 * The authentication context class of a sign-in: after a second factor, the REFEDS MFA Profile's
 * class (https://refeds.org/profile/mfa), the one published for "multi-factor, whatever the
 * factors" and asked for by SPs of the research and education federations; SAML Authn Context 2.0
 * has no such class (TimeSyncToken describes a hardware token's declaration, not an authenticator
 * app or a security key). After a password alone PasswordProtectedTransport (over TLS: the issuer
 * is https outside development); else unspecified.
 */
export function authnContextOf(amr: readonly string[]): string {
  if (amr.includes('mfa')) return AUTHN_CONTEXT.mfa;
  if (amr.includes('pwd')) return AUTHN_CONTEXT.password;
  return AUTHN_CONTEXT.unspecified;
}

/**
 * The SP's attributes (`attributes`: SAML name → claim) with the values of the released claims:
 * a string, number or boolean is one value, an array several, anything else is left out.
 */
export function attributesOf(
  sp: ServiceProvider,
  claims: Readonly<Record<string, unknown>>,
): { name: string; values: string[] }[] {
  return Object.entries(sp.attributes).map(([name, claim]) => {
    const value = claims[claim];
    const list = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
    return {
      name,
      values: list.filter((v) => ['string', 'number', 'boolean'].includes(typeof v)).map((v) => String(v)),
    };
  });
}
