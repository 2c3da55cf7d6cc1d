/**
 * XML signatures of SAML messages, through xml-crypto (no canonicalization or signature code of
 * Sigil's own): verifying an SP's signed request in its two forms, and signing Sigil's responses.
 *
 * - HTTP-POST (SAML Bindings §3.5.4; SAML Core §5.4): an enveloped signature on the root element. It
 *   counts only if it is the root's own (a direct child, the document's only Signature), has exactly
 *   one Reference, to the root's ID (unique in the document), verifies with a certificate from the
 *   SP's metadata (never a key from KeyInfo) and an algorithm without SHA-1; the caller then reads
 *   the message from the canonical XML xml-crypto verified (`signedXml`), never from the document it
 *   was handed: a signed element moved under an attacker-made root (signature wrapping) fails the
 *   first checks, and nothing unsigned can be read.
 * - HTTP-Redirect (SAML Bindings §3.4.4.1): `Signature` over the octets
 *   `SAMLRequest=…&RelayState=…&SigAlg=…` exactly as they were URL-encoded in the query.
 */
import { createVerify, type KeyObject, X509Certificate } from 'node:crypto';
import { createRequire } from 'node:module';
import type { SignedXml as SignedXmlClass } from 'xml-crypto';
import { formDecode } from './query.js';
import { childrenNamed, NS, XmlRefused } from './xml.js';

let signedXml: typeof SignedXmlClass | undefined;

/**
 * xml-crypto's SignedXml, loaded when a signature is first checked or made: only a config with
 * SAML on does, and a start without it does not pay for the module (xml.ts loads xmldom alike).
 */
function signedXmlClass(): typeof SignedXmlClass {
  signedXml ??= (createRequire(import.meta.url)('xml-crypto') as typeof import('xml-crypto')).SignedXml;
  return signedXml;
}

/** Signature algorithms accepted from SPs and used by Sigil (XML Signature 1.1 §6.4.2; no SHA-1). */
export const SIGNATURE_ALGORITHMS: Readonly<Record<string, 'sha256' | 'sha512'>> = {
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256': 'sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512': 'sha512',
};
/** The URI of each configured `saml.signatureAlgorithm`. */
export const SIGNATURE_ALGORITHM_URIS = {
  'rsa-sha256': 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'rsa-sha512': 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
} as const;
const DIGESTS = {
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  sha512: 'http://www.w3.org/2001/04/xmlenc#sha512',
} as const;
const EXCLUSIVE_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

/** A certificate (base64 DER) as PEM, which xml-crypto takes. */
export function certificatePem(der: string): string {
  return `-----BEGIN CERTIFICATE-----\n${der.match(/.{1,64}/g)?.join('\n') ?? ''}\n-----END CERTIFICATE-----\n`;
}

/** The public key of a certificate (base64 DER). */
function publicKeyOf(der: string): KeyObject {
  return new X509Certificate(Buffer.from(der, 'base64')).publicKey;
}

/** Whether the root element of `doc` carries a signature of its own (a direct ds:Signature child). */
export function hasEnvelopedSignature(doc: Document): boolean {
  return childrenNamed(doc.documentElement, NS.dsig, 'Signature').length > 0;
}

/**
 * Verifies the enveloped signature of `doc`'s root element (see the module comment) with any of
 * `certificates`.
 * @param xml the text `doc` was parsed from (what xml-crypto verifies)
 * @param root the signed element: the document's root, or the message in a SOAP Body (SAML
 *   Bindings §3.2.3), which must then meet the same rules
 * @returns the canonical XML of the signed element, to be read instead of `doc`
 * @throws XmlRefused when the signature is not the element's own, references anything else, uses an
 *   algorithm not accepted, or verifies with none of the certificates.
 */
export function verifyEnvelopedSignature(
  xml: string,
  doc: Document,
  certificates: readonly string[],
  root: Element = doc.documentElement,
): string {
  const all = doc.getElementsByTagNameNS(NS.dsig, 'Signature');
  const [signature, ...others] = childrenNamed(root, NS.dsig, 'Signature');
  if (!signature || others.length > 0 || all.length !== 1)
    throw new XmlRefused('the signature is not the message’s own');
  const id = root.getAttribute('ID') ?? '';
  if (id === '' || elementsWithId(doc, id) !== 1) throw new XmlRefused('the signed message has no unique ID');
  const signedInfo = childrenNamed(signature, NS.dsig, 'SignedInfo')[0];
  const references = signedInfo ? childrenNamed(signedInfo, NS.dsig, 'Reference') : [];
  if (references.length !== 1 || references[0]?.getAttribute('URI') !== `#${id}`)
    throw new XmlRefused('the signature does not reference the message');
  const method = signedInfo ? childrenNamed(signedInfo, NS.dsig, 'SignatureMethod')[0]?.getAttribute('Algorithm') : '';
  if (!method || !(method in SIGNATURE_ALGORITHMS)) throw new XmlRefused('the signature algorithm is not accepted');
  for (const cert of certificates) {
    const sig = new (signedXmlClass())({ publicCert: certificatePem(cert), getCertFromKeyInfo: () => null });
    sig.loadSignature(signature);
    let valid = false;
    try {
      valid = sig.checkSignature(xml);
    } catch {
      valid = false;
    }
    // getSignedReferences() is read only after a check that returned true (a throw may leave content no one signed).
    const signed = valid ? sig.getSignedReferences() : [];
    if (signed.length === 1 && signed[0] !== undefined) return signed[0];
  }
  throw new XmlRefused('the signature does not verify');
}

/** How many elements of `doc` carry an ID-like attribute (`ID`, `Id`, `id`) of value `id`. */
function elementsWithId(doc: Document, id: string): number {
  let count = 0;
  const all = doc.getElementsByTagName('*');
  for (let i = 0; i < all.length; i++) {
    const el = all.item(i);
    if (el && ['ID', 'Id', 'id'].some((name) => el.getAttribute(name) === id)) count++;
  }
  return count;
}

/**
 * Verifies an HTTP-Redirect binding signature (SAML Bindings §3.4.4.1).
 * @param raw the query's parameters as they were sent, still URL-encoded (`SAMLRequest` or
 *   `SAMLResponse`, `RelayState` when sent, `SigAlg`, `Signature`)
 * @param field which of `SAMLRequest` and `SAMLResponse` carries the message
 * @throws XmlRefused when `SigAlg` is not accepted or the signature verifies with none of the certificates.
 */
export function verifyRedirectSignature(
  raw: Readonly<Record<string, string>>,
  field: 'SAMLRequest' | 'SAMLResponse',
  certificates: readonly string[],
): void {
  const sigAlg = formDecode(raw.SigAlg ?? '');
  const hash = SIGNATURE_ALGORITHMS[sigAlg];
  if (!hash) throw new XmlRefused('the signature algorithm is not accepted');
  const octets = [field, 'RelayState', 'SigAlg']
    .filter((name) => raw[name] !== undefined)
    .map((name) => `${name}=${raw[name]}`)
    .join('&');
  const signature = Buffer.from(formDecode(raw.Signature ?? ''), 'base64');
  for (const cert of certificates) {
    const verifier = createVerify(hash === 'sha256' ? 'RSA-SHA256' : 'RSA-SHA512');
    verifier.update(octets, 'utf8');
    if (verifier.verify(publicKeyOf(cert), signature)) return;
  }
  throw new XmlRefused('the signature does not verify');
}

/** Sigil's signing key as xml-crypto takes it, and how it signs. */
export interface SamlSigner {
  privateKey: KeyObject;
  /** The key's certificate (base64 DER), sent in KeyInfo. */
  certificate: string;
  /** The signature algorithm's URI (`SIGNATURE_ALGORITHM_URIS`). */
  algorithm: string;
}

/**
 * Signs the element of `xml` that `target` selects with an enveloped signature placed right after
 * that element's Issuer (the schema's place for it, SAML Core §5.4.2): exclusive canonicalization,
 * the configured algorithm and its digest, the certificate in KeyInfo.
 * @param target an XPath selecting one element that has an `ID` and an Issuer child
 * @returns the signed document's text
 */
export function signElement(xml: string, target: string, signer: SamlSigner): string {
  const hash = SIGNATURE_ALGORITHMS[signer.algorithm] ?? 'sha256';
  const sig = new (signedXmlClass())({
    privateKey: signer.privateKey,
    signatureAlgorithm: signer.algorithm as never,
    canonicalizationAlgorithm: EXCLUSIVE_C14N,
    // KeyInfo from the certificate as stored (base64 DER, checked when the key was made): given the
    // PEM instead, xml-crypto parses the certificate again for every signature, two per Response.
    getKeyInfoContent: ({ prefix }: { prefix?: string | null }) => {
      const p = prefix ? `${prefix}:` : '';
      return `<${p}X509Data><${p}X509Certificate>${signer.certificate}</${p}X509Certificate></${p}X509Data>`;
    },
  });
  // `xs` is used in attribute values only (xsi:type="xs:string"), which exclusive canonicalization
  // does not see as used: named in the prefix list, its declaration stays in what is signed.
  sig.addReference({
    xpath: target,
    transforms: [ENVELOPED, EXCLUSIVE_C14N],
    digestAlgorithm: DIGESTS[hash],
    inclusiveNamespacesPrefixList: ['xs'],
  });
  sig.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: `${target}/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return sig.getSignedXml();
}
