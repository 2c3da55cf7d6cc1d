/**
 * Sigil's own SAML metadata (SAML Metadata §2.3.2, §2.4.3): an EntityDescriptor whose entityID is the
 * issuer, with one IDPSSODescriptor: a signing KeyDescriptor per certificate in force (the next key's
 * before it signs and the previous key's while it is kept, as the JWKS publishes JWT keys, so an SP
 * that refreshes its metadata meets every signature's key first), the SingleLogoutService and
 * SingleSignOnService endpoints in the HTTP-Redirect and HTTP-POST bindings, and the NameID formats.
 */
import { POST_BINDING, REDIRECT_BINDING } from './service-providers.js';
import { NAME_ID_FORMATS } from './authn-request.js';
import { addElement, newDocument, NS, serialize } from './xml.js';

/** What the metadata names. */
export interface IdpMetadata {
  entityId: string;
  ssoUrl: string;
  sloUrl: string;
  /** Signing certificates, base64 DER. */
  certificates: readonly string[];
  /** Whether AuthnRequests must be signed by every SP (`WantAuthnRequestsSigned`). */
  wantAuthnRequestsSigned: boolean;
}

/** The metadata document's XML text. */
export function idpMetadata(m: IdpMetadata): string {
  const doc = newDocument(NS.metadata, 'md:EntityDescriptor');
  const root = doc.documentElement;
  root.setAttribute('entityID', m.entityId);
  const idp = addElement(root, NS.metadata, 'md:IDPSSODescriptor', {
    protocolSupportEnumeration: NS.protocol,
    ...(m.wantAuthnRequestsSigned ? { WantAuthnRequestsSigned: 'true' } : {}),
  });
  for (const cert of m.certificates) {
    const descriptor = addElement(idp, NS.metadata, 'md:KeyDescriptor', { use: 'signing' });
    const keyInfo = addElement(descriptor, NS.dsig, 'ds:KeyInfo');
    const data = addElement(keyInfo, NS.dsig, 'ds:X509Data');
    addElement(data, NS.dsig, 'ds:X509Certificate', {}, cert);
  }
  for (const binding of [REDIRECT_BINDING, POST_BINDING])
    addElement(idp, NS.metadata, 'md:SingleLogoutService', { Binding: binding, Location: m.sloUrl });
  for (const format of Object.values(NAME_ID_FORMATS)) addElement(idp, NS.metadata, 'md:NameIDFormat', {}, format);
  for (const binding of [REDIRECT_BINDING, POST_BINDING])
    addElement(idp, NS.metadata, 'md:SingleSignOnService', { Binding: binding, Location: m.ssoUrl });
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize(doc)}`;
}
