/**
 * The messages of SAML Single Logout (SAML Core §3.7; Profiles §4.4) at /saml/slo: an SP's
 * LogoutRequest and LogoutResponse as Sigil reads them, and Sigil's own, built with the DOM
 * (xml.ts) so that no value becomes markup. A LogoutRequest must be signed by the SP (Profiles
 * §4.4.4.1: signed, or protected by the binding, which the browser bindings are not), and so must a
 * LogoutResponse from an SP that has a signing certificate (§4.4.4.2);
 * besides message.ts's checks, a LogoutRequest must not be past its NotOnOrAfter, names its
 * principal by a NameID (no BaseID, no EncryptedID, which Sigil never issues) and may name
 * SessionIndexes; a LogoutResponse must name the request it answers (InResponseTo).
 */
import type { BindingMessage } from './binding.js';
import { CLOCK_SKEW, checkIdAndTime, receiveMessage } from './message.js';
import { instant, newSamlId, STATUS } from './response.js';
import type { ServiceProvider, ServiceProviders } from './service-providers.js';
import { addElement, attr, childrenNamed, newDocument, NS, onlyChild, serialize, textOf, XmlRefused } from './xml.js';

/** The most SessionIndex elements read from one LogoutRequest. */
const MAX_SESSION_INDEXES = 20;
/** The longest NameID or SessionIndex value read, characters (SAML Core §8.3.7: persistent ≤ 256). */
const MAX_VALUE_LENGTH = 1024;

/** A NameID as asserted or as named in a LogoutRequest (SAML Core §2.2.3). */
export interface NameIdValue {
  value: string;
  /** The Format URI; absent means unspecified. */
  format?: string;
  spNameQualifier?: string;
}

/** A checked LogoutRequest from an SP. */
export interface LogoutRequestIn {
  id: string;
  sp: ServiceProvider;
  nameId: NameIdValue;
  /** The SessionIndexes named (none: every session of the principal at the SP). */
  sessionIndexes: string[];
  relayState: string | undefined;
}

/** A checked LogoutResponse from an SP. */
export interface LogoutResponseIn {
  sp: ServiceProvider;
  inResponseTo: string;
  /** The top-level status is Success. */
  success: boolean;
  relayState: string | undefined;
}

/**
 * Reads and checks an SP's LogoutRequest (see the module comment); nothing is stored.
 * @param sloUrl this endpoint's URL, which Destination must name
 * @param now Unix seconds
 * @throws XmlRefused for every refusal, its message fit for the error page.
 */
export function readLogoutRequest(
  message: BindingMessage,
  sps: ServiceProviders,
  sloUrl: string,
  now: number,
): LogoutRequestIn {
  const { root, sp, signed, relayState } = receiveMessage(message, 'SAMLRequest', 'LogoutRequest', sps);
  if (!signed) throw new XmlRefused('the service provider must sign its logout requests');
  const id = checkIdAndTime(root, { destination: sloUrl, signed, now });
  const notOnOrAfter = attr(root, 'NotOnOrAfter');
  if (notOnOrAfter !== undefined) {
    const until = Date.parse(notOnOrAfter) / 1000;
    if (!Number.isFinite(until) || until + CLOCK_SKEW <= now) throw new XmlRefused('the logout request has expired');
  }
  if (childrenNamed(root, NS.assertion, 'BaseID').length + childrenNamed(root, NS.assertion, 'EncryptedID').length)
    throw new XmlRefused('the logout request must name its principal by a NameID');
  const nameIdEl = onlyChild(root, NS.assertion, 'NameID');
  const value = textOf(nameIdEl);
  if (!nameIdEl || !value || value.length > MAX_VALUE_LENGTH)
    throw new XmlRefused('the logout request has no valid NameID');
  const format = attr(nameIdEl, 'Format');
  const spNameQualifier = attr(nameIdEl, 'SPNameQualifier');
  const indexes = childrenNamed(root, NS.protocol, 'SessionIndex').map((el) => textOf(el) ?? '');
  if (indexes.length > MAX_SESSION_INDEXES || indexes.some((v) => v === '' || v.length > MAX_VALUE_LENGTH))
    throw new XmlRefused('the logout request has invalid SessionIndexes');
  return {
    id,
    sp,
    nameId: {
      value,
      ...(format !== undefined ? { format } : {}),
      ...(spNameQualifier !== undefined ? { spNameQualifier } : {}),
    },
    sessionIndexes: indexes,
    relayState,
  };
}

/**
 * Reads and checks an SP's LogoutResponse (see the module comment); nothing is stored. Whether
 * Sigil sent the request it answers is the caller's check.
 * @throws XmlRefused for every refusal.
 */
export function readLogoutResponse(
  message: BindingMessage,
  sps: ServiceProviders,
  sloUrl: string,
  now: number,
): LogoutResponseIn {
  const { root, sp, signed, relayState } = receiveMessage(message, 'SAMLResponse', 'LogoutResponse', sps);
  // An SP without a certificate cannot sign: its response is still bound to the request Sigil sent
  // (InResponseTo, and RelayState naming the chain, both random and known to the browser only), and
  // the most a forged one could do is skip that SP. An SP with a certificate must sign.
  if (!signed && sp.certificates.length > 0)
    throw new XmlRefused('the service provider must sign its logout responses');
  checkIdAndTime(root, { destination: sloUrl, signed, now });
  const inResponseTo = attr(root, 'InResponseTo');
  if (!inResponseTo) throw new XmlRefused('the logout response answers no request');
  const status = onlyChild(root, NS.protocol, 'Status');
  const code = status && onlyChild(status, NS.protocol, 'StatusCode');
  return { sp, inResponseTo, success: code !== undefined && attr(code, 'Value') === STATUS.success, relayState };
}

/** What Sigil's LogoutRequest to an SP says (SAML Core §3.7.1). */
export interface LogoutRequestFacts {
  id: string;
  issuer: string;
  /** The SP's single logout URL. */
  destination: string;
  /** The NameID exactly as the SP was given it. */
  nameId: NameIdValue;
  sessionIndex: string;
  /** Unix seconds. */
  now: number;
  /** How long the SP may act on it, seconds (NotOnOrAfter). */
  lifetime: number;
}

/** Sigil's LogoutRequest as XML text, unsigned (the binding signs it). */
export function logoutRequestXml(f: LogoutRequestFacts): string {
  const doc = newDocument(NS.protocol, 'samlp:LogoutRequest');
  fillLogoutRequest(doc.documentElement, f);
  return serialize(doc);
}

/** Makes `root`, a `samlp:LogoutRequest` element, Sigil's LogoutRequest (SAML Core §3.7.1). */
export function fillLogoutRequest(root: Element, f: LogoutRequestFacts): void {
  root.setAttribute('xmlns:saml', NS.assertion);
  root.setAttribute('ID', f.id);
  root.setAttribute('Version', '2.0');
  root.setAttribute('IssueInstant', instant(f.now));
  root.setAttribute('Destination', f.destination);
  root.setAttribute('NotOnOrAfter', instant(f.now + f.lifetime));
  root.setAttribute('Reason', 'urn:oasis:names:tc:SAML:2.0:logout:user');
  addElement(root, NS.assertion, 'saml:Issuer', {}, f.issuer);
  addElement(
    root,
    NS.assertion,
    'saml:NameID',
    { Format: f.nameId.format, SPNameQualifier: f.nameId.spNameQualifier },
    f.nameId.value,
  );
  addElement(root, NS.protocol, 'samlp:SessionIndex', {}, f.sessionIndex);
}

/** Sigil's LogoutResponse as XML text, unsigned (the binding signs it); a new ID. */
export function logoutResponseXml(f: {
  issuer: string;
  destination: string;
  inResponseTo: string;
  status: string;
  now: number;
}): string {
  const doc = newDocument(NS.protocol, 'samlp:LogoutResponse');
  const root = doc.documentElement;
  root.setAttribute('xmlns:saml', NS.assertion);
  root.setAttribute('ID', newSamlId());
  root.setAttribute('Version', '2.0');
  root.setAttribute('IssueInstant', instant(f.now));
  root.setAttribute('Destination', f.destination);
  root.setAttribute('InResponseTo', f.inResponseTo);
  addElement(root, NS.assertion, 'saml:Issuer', {}, f.issuer);
  const status = addElement(root, NS.protocol, 'samlp:Status');
  addElement(status, NS.protocol, 'samlp:StatusCode', { Value: f.status });
  return serialize(doc);
}
