/**
 * A SAML service provider made by the tests: its key and self-signed certificate, its metadata,
 * AuthnRequests in both bindings (signed with xml-crypto as an SP would, or over the query octets
 * of SAML Bindings §3.4.4.1 with node:crypto), and readers of the auto-posted Response. Responses
 * are verified with xmlsec1 (Debian's, an implementation other than Sigil's) where a test checks a
 * signature.
 */
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API first.
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { createSign, createVerify, generateKeyPairSync, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { X509CertificateGenerator } from '@peculiar/x509';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { unescapeHtml } from './authorize-helpers.js';

export const SP_ENTITY = 'https://sp.example/metadata';
export const SP_ACS = 'https://sp.example/acs';
export const SP_ACS2 = 'https://sp.example/acs2';
export const NS_P = 'urn:oasis:names:tc:SAML:2.0:protocol';
export const NS_A = 'urn:oasis:names:tc:SAML:2.0:assertion';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';

/** An SP's RSA key (PEM) and its self-signed certificate (base64 DER). */
export interface SpKeys {
  privateKeyPem: string;
  certificate: string;
}

/** A fresh SP key with a self-signed certificate. */
export async function spKeys(): Promise<SpKeys> {
  const alg = {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await X509CertificateGenerator.createSelfSigned(
    { name: 'CN=test sp', keys, signingAlgorithm: alg, notAfter: new Date(Date.now() + 86400_000) },
    webcrypto as unknown as Crypto,
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)).toString('base64');
  return {
    privateKeyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)?.join('\n')}\n-----END PRIVATE KEY-----\n`,
    certificate: Buffer.from(cert.rawData).toString('base64'),
  };
}

/** A KeyDescriptor of `use` (none when null) holding a certificate (base64 DER). */
function keyDescriptor(use: 'signing' | 'encryption' | null, certificate: string): string {
  return `<md:KeyDescriptor${use ? ` use="${use}"` : ''}><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`;
}

/**
 * An SP's metadata naming `acs` (HTTP-POST, in order) and, when given, its signing certificate and
 * its encryption certificate (`use` "encryption" unless `encryptionUse` says none).
 */
export function spMetadata(
  entityId: string,
  acs: string[],
  certificate?: string,
  extra: {
    authnRequestsSigned?: boolean;
    slo?: { url: string; binding: 'redirect' | 'post' };
    /** A SingleLogoutService of the SOAP binding (SAML Bindings §3.2). */
    soapSlo?: string;
    encryptionCertificate?: string;
    encryptionUse?: 'encryption' | null;
  } = {},
): string {
  const key =
    (certificate ? keyDescriptor('signing', certificate) : '') +
    (extra.encryptionCertificate
      ? keyDescriptor(
          extra.encryptionUse === undefined ? 'encryption' : extra.encryptionUse,
          extra.encryptionCertificate,
        )
      : '');
  const services = acs
    .map(
      (url, i) =>
        `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${url}" index="${i}"/>`,
    )
    .join('');
  const signed = extra.authnRequestsSigned ? ' AuthnRequestsSigned="true"' : '';
  const slo = extra.slo
    ? `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:${extra.slo.binding === 'post' ? 'HTTP-POST' : 'HTTP-Redirect'}" Location="${extra.slo.url}"/>`
    : '';
  const soap = extra.soapSlo
    ? `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="${extra.soapSlo}"/>`
    : '';
  return `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entityId}"><md:SPSSODescriptor protocolSupportEnumeration="${NS_P}"${signed}>${key}${slo}${soap}${services}</md:SPSSODescriptor></md:EntityDescriptor>`;
}

/** What an AuthnRequest says. */
export interface RequestShape {
  id?: string;
  issuer?: string;
  destination?: string | null;
  acs?: string | null;
  acsIndex?: number;
  forceAuthn?: boolean;
  isPassive?: boolean;
  nameIdFormat?: string;
  issueInstant?: string;
  mfa?: boolean;
}

/** A fresh request ID. */
export function requestId(): string {
  return `_${randomBytes(16).toString('hex')}`;
}

/** An AuthnRequest's XML (the tests' own text, as any SP's would be). */
export function authnRequest(issuer: string, shape: RequestShape = {}): string {
  const id = shape.id ?? requestId();
  const attrs = [
    `ID="${id}"`,
    'Version="2.0"',
    `IssueInstant="${shape.issueInstant ?? new Date().toISOString()}"`,
    ...(shape.destination === null ? [] : [`Destination="${shape.destination ?? `${issuer}/saml/sso`}"`]),
    ...(shape.acs === null || shape.acsIndex !== undefined
      ? []
      : [`AssertionConsumerServiceURL="${shape.acs ?? SP_ACS}"`]),
    ...(shape.acsIndex !== undefined ? [`AssertionConsumerServiceIndex="${shape.acsIndex}"`] : []),
    ...(shape.forceAuthn ? ['ForceAuthn="true"'] : []),
    ...(shape.isPassive ? ['IsPassive="true"'] : []),
  ];
  const policy = shape.nameIdFormat ? `<samlp:NameIDPolicy Format="${shape.nameIdFormat}" AllowCreate="true"/>` : '';
  const mfa = shape.mfa
    ? '<samlp:RequestedAuthnContext Comparison="exact"><saml:AuthnContextClassRef>https://refeds.org/profile/mfa</saml:AuthnContextClassRef></samlp:RequestedAuthnContext>'
    : '';
  return `<samlp:AuthnRequest xmlns:samlp="${NS_P}" xmlns:saml="${NS_A}" ${attrs.join(' ')}><saml:Issuer>${shape.issuer ?? SP_ENTITY}</saml:Issuer>${policy}${mfa}</samlp:AuthnRequest>`;
}

/** The ID of an AuthnRequest's XML. */
export function idOf(xml: string): string {
  return /\bID="([^"]+)"/.exec(xml)?.[1] ?? '';
}

/** What an SP's LogoutRequest says (SAML Core §3.7.1). */
export interface LogoutShape {
  id?: string;
  issuer?: string;
  destination?: string | null;
  nameId: string;
  format?: string;
  spNameQualifier?: string;
  sessionIndex?: string;
  notOnOrAfter?: string;
  issueInstant?: string;
}

/** An SP's LogoutRequest's XML. */
export function logoutRequest(idp: string, shape: LogoutShape): string {
  const attrs = [
    `ID="${shape.id ?? requestId()}"`,
    'Version="2.0"',
    `IssueInstant="${shape.issueInstant ?? new Date().toISOString()}"`,
    ...(shape.destination === null ? [] : [`Destination="${shape.destination ?? `${idp}/saml/slo`}"`]),
    ...(shape.notOnOrAfter ? [`NotOnOrAfter="${shape.notOnOrAfter}"`] : []),
  ];
  const format = shape.format ? ` Format="${shape.format}"` : '';
  const qualifier = shape.spNameQualifier ? ` SPNameQualifier="${shape.spNameQualifier}"` : '';
  const index = shape.sessionIndex ? `<samlp:SessionIndex>${shape.sessionIndex}</samlp:SessionIndex>` : '';
  return `<samlp:LogoutRequest xmlns:samlp="${NS_P}" xmlns:saml="${NS_A}" ${attrs.join(' ')}><saml:Issuer>${shape.issuer ?? SP_ENTITY}</saml:Issuer><saml:NameID${qualifier}${format}>${shape.nameId}</saml:NameID>${index}</samlp:LogoutRequest>`;
}

/** An SP's LogoutResponse's XML (Success unless `status` says otherwise). */
export function logoutResponse(
  idp: string,
  shape: { inResponseTo: string; issuer?: string; status?: string; destination?: string },
): string {
  const status = shape.status ?? 'urn:oasis:names:tc:SAML:2.0:status:Success';
  return `<samlp:LogoutResponse xmlns:samlp="${NS_P}" xmlns:saml="${NS_A}" ID="${requestId()}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${shape.destination ?? `${idp}/saml/slo`}" InResponseTo="${shape.inResponseTo}"><saml:Issuer>${shape.issuer ?? SP_ENTITY}</saml:Issuer><samlp:Status><samlp:StatusCode Value="${status}"/></samlp:Status></samlp:LogoutResponse>`;
}

/** A message Sigil sent through the browser in the HTTP-Redirect binding, decoded from its URL. */
export interface RedirectedMessage {
  /** The URL without its query. */
  location: string;
  xml: string;
  doc: Document;
  relayState: string | undefined;
  /** Whether the query's signature (SAML Bindings §3.4.4.1) verifies with `certificate`. */
  verifies(certificate: string): boolean;
}

/** Decodes a SAMLRequest or SAMLResponse redirect URL of Sigil's. */
export function redirectedMessage(url: string): RedirectedMessage {
  const at = url.indexOf('?');
  const raw = Object.fromEntries(
    url
      .slice(at + 1)
      .split('&')
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  ) as Record<string, string>;
  const field = raw.SAMLRequest !== undefined ? 'SAMLRequest' : 'SAMLResponse';
  const xml = inflateRawSync(Buffer.from(decodeURIComponent(raw[field] ?? ''), 'base64')).toString('utf8');
  return {
    location: url.slice(0, at),
    xml,
    doc: new DOMParser().parseFromString(xml, 'text/xml') as unknown as Document,
    relayState: raw.RelayState === undefined ? undefined : decodeURIComponent(raw.RelayState),
    verifies(certificate) {
      const octets = [field, 'RelayState', 'SigAlg']
        .filter((name) => raw[name] !== undefined)
        .map((name) => `${name}=${raw[name]}`)
        .join('&');
      const pem = `-----BEGIN CERTIFICATE-----\n${certificate.match(/.{1,64}/g)?.join('\n')}\n-----END CERTIFICATE-----\n`;
      return createVerify('RSA-SHA256')
        .update(octets)
        .verify(new X509Certificate(pem).publicKey, Buffer.from(decodeURIComponent(raw.Signature ?? ''), 'base64'));
    },
  };
}

/** Signs an AuthnRequest with an enveloped signature after its Issuer, as an SP does for HTTP-POST. */
export function signRequest(xml: string, keys: SpKeys): string {
  const sig = new SignedXml({
    privateKey: keys.privateKeyPem,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: '/*',
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  sig.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' },
  });
  return sig.getSignedXml();
}

/** The form of an HTTP-POST binding message (a request unless `field` says otherwise). */
export function postForm(
  xml: string,
  relayState?: string,
  field: 'SAMLRequest' | 'SAMLResponse' = 'SAMLRequest',
): Record<string, string> {
  return {
    [field]: Buffer.from(xml).toString('base64'),
    ...(relayState !== undefined ? { RelayState: relayState } : {}),
  };
}

/**
 * The path and query of an HTTP-Redirect binding message (DEFLATE, base64, URL-encoded), signed over
 * the query octets (SAML Bindings §3.4.4.1) when `keys` are given: an AuthnRequest to /saml/sso
 * unless `to` says otherwise.
 */
export function redirectPath(
  xml: string,
  relayState?: string,
  keys?: SpKeys,
  to: { path: string; field: 'SAMLRequest' | 'SAMLResponse' } = { path: '/saml/sso', field: 'SAMLRequest' },
): string {
  const parts = [`${to.field}=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}`];
  if (relayState !== undefined) parts.push(`RelayState=${encodeURIComponent(relayState)}`);
  if (keys) {
    parts.push(`SigAlg=${encodeURIComponent(RSA_SHA256)}`);
    const signature = createSign('RSA-SHA256').update(parts.join('&')).sign(keys.privateKeyPem, 'base64');
    parts.push(`Signature=${encodeURIComponent(signature)}`);
  }
  return `${to.path}?${parts.join('&')}`;
}

/** What an auto-posting Response page carries: where it posts and the decoded Response. */
export interface PostedResponse {
  action: string;
  xml: string;
  doc: Document;
  relayState: string | undefined;
}

/** Reads the form_post page that carries a SAML Response (or a request, as a LogoutRequest); fails when the page is not one. */
export function postedResponse(html: string): PostedResponse {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const value = (name: string) => {
    const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
    return m ? unescapeHtml(m[1] ?? '') : undefined;
  };
  const response = value('SAMLResponse') ?? value('SAMLRequest');
  if (!action || response === undefined) throw new Error(`not a SAML message page:\n${html.slice(0, 2000)}`);
  const xml = Buffer.from(response, 'base64').toString('utf8');
  return {
    action: unescapeHtml(action),
    xml,
    doc: new DOMParser().parseFromString(xml, 'text/xml') as unknown as Document,
    relayState: value('RelayState'),
  };
}

/** The first element named `local` in the SAML assertion or protocol namespace. */
export function element(doc: Document, local: string, ns = NS_A): Element | undefined {
  return doc.getElementsByTagNameNS(ns, local).item(0) ?? undefined;
}

/** The status code values of a Response, top-level first. */
export function statusCodes(doc: Document): string[] {
  const codes = doc.getElementsByTagNameNS(NS_P, 'StatusCode');
  return Array.from({ length: codes.length }, (_, i) => codes.item(i)?.getAttribute('Value') ?? '');
}

/** The attribute name → values of a Response's assertion. */
export function attributes(doc: Document): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const list = doc.getElementsByTagNameNS(NS_A, 'Attribute');
  for (let i = 0; i < list.length; i++) {
    const a = list.item(i) as Element;
    const values = a.getElementsByTagNameNS(NS_A, 'AttributeValue');
    out[a.getAttribute('Name') ?? ''] = Array.from(
      { length: values.length },
      (_, j) => values.item(j)?.textContent ?? '',
    );
  }
  return out;
}

/**
 * Verifies the signature of the element `node` (a protocol message of `urn:…:protocol`, or
 * `urn:…:assertion:Assertion` in a Response) with xmlsec1 against the IdP's certificate from its metadata; returns whether it verified.
 */
export function xmlsecVerifies(
  dir: string,
  xml: string,
  certificate: string,
  node: 'Response' | 'Assertion' | 'LogoutRequest' | 'LogoutResponse',
): boolean {
  const file = join(dir, `response-${randomBytes(4).toString('hex')}.xml`);
  const pem = join(dir, `idp-${randomBytes(4).toString('hex')}.pem`);
  writeFileSync(file, xml);
  writeFileSync(
    pem,
    `-----BEGIN CERTIFICATE-----\n${certificate.match(/.{1,64}/g)?.join('\n')}\n-----END CERTIFICATE-----\n`,
  );
  const ns = node === 'Assertion' ? NS_A : NS_P;
  try {
    execFileSync(
      'xmlsec1',
      [
        '--verify',
        '--pubkey-cert-pem',
        pem,
        '--id-attr:ID',
        `${ns}:${node}`,
        '--node-xpath',
        `//*[local-name()='${node}']/*[local-name()='Signature']`,
        file,
      ],
      { stdio: 'pipe' },
    );
    return true;
  } catch {
    return false;
  }
}

/** The signing certificates of the IdP's metadata (base64 DER). */
export function metadataCertificates(xml: string): string[] {
  return [...xml.matchAll(/<ds:X509Certificate>([^<]+)<\/ds:X509Certificate>/g)].map((m) => m[1] ?? '');
}

/** A key pair for a forged signature (never the SP's). */
export function otherKeyPem(): string {
  return generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}
