/**
 * Encrypting an Assertion to its service provider (SAML Core §2.3.4, §6.2: an EncryptedAssertion
 * holding an xenc:EncryptedData of the Assertion element) through xml-encryption (auth0): no XML
 * encryption code of Sigil's own. The choice of algorithms is Sigil's, and fixed:
 *
 * - the content: AES-256-GCM (XML Encryption 1.1 §5.2.4), authenticated, so a changed ciphertext
 *   fails to decrypt instead of decrypting to something else (the CBC modes' padding-oracle
 *   attacks, XML Encryption 1.1 §6.5, do not apply);
 * - its key: RSA-OAEP with MGF1-SHA-1 and SHA-1 (`rsa-oaep-mgf1p`, §5.5.2), to the SP's encryption
 *   certificate, what xmlsec1 (pysaml2, lasso and so mod_auth_mellon, Shibboleth) decrypts by
 *   default. RSA PKCS#1 v1.5 and 3DES are never asked for, and xml-encryption itself refuses them
 *   unless told otherwise, which Sigil never does.
 *
 * The Assertion is signed before it is encrypted, so that the SP checks the signature of the
 * Assertion it decrypted (SAML Core §6.2).
 */
import { X509Certificate } from 'node:crypto';
import { createRequire } from 'node:module';
import { certificatePem } from './signatures.js';
import { childrenNamed, NS, parseUntrusted, serialize } from './xml.js';

/** The content encryption algorithm (XML Encryption 1.1 §5.2.4). */
export const CONTENT_ENCRYPTION = 'http://www.w3.org/2009/xmlenc11#aes256-gcm';
/** The key transport algorithm (XML Encryption 1.1 §5.5.2: RSA-OAEP, MGF1 with SHA-1). */
export const KEY_TRANSPORT = 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p';

/** What Sigil uses of xml-encryption, which ships no types. */
interface XmlEncryption {
  encrypt(
    content: string,
    options: {
      rsa_pub: string;
      pem: string;
      encryptionAlgorithm: string;
      keyEncryptionAlgorithm: string;
      keyEncryptionDigest: 'sha1';
      disallowEncryptionWithInsecureAlgorithm: true;
    },
    callback: (err: Error | null, result?: string) => void,
  ): void;
}

let xmlEncryption: XmlEncryption | undefined;

/**
 * xml-encryption, loaded when an assertion is first encrypted: only an SP with `encryptAssertion`
 * needs it, and a start without one does not pay for the module (as xml-crypto, signatures.ts).
 */
function xmlEncryptionModule(): XmlEncryption {
  xmlEncryption ??= createRequire(import.meta.url)('xml-encryption') as XmlEncryption;
  return xmlEncryption;
}

/**
 * Whether a certificate (base64 DER) can take an encrypted key: an RSA key (RSA-OAEP is the only
 * key transport Sigil uses).
 */
export function isEncryptionCertificate(der: string): boolean {
  return new X509Certificate(Buffer.from(der, 'base64')).publicKey.asymmetricKeyType === 'rsa';
}

/**
 * The Response with its (signed) Assertion replaced by an EncryptedAssertion to `certificate`.
 * @param xml a Response of Sigil's own making with one Assertion child
 * @param certificate the SP's encryption certificate, base64 DER of an RSA key
 * @returns the Response's text
 * @throws Error when the Response has no Assertion or xml-encryption fails (a certificate
 *   `isEncryptionCertificate` accepted does not)
 */
export async function encryptAssertion(xml: string, certificate: string): Promise<string> {
  const doc = parseUntrusted(xml, xml.length);
  const response = doc.documentElement;
  const [assertion] = childrenNamed(response, NS.assertion, 'Assertion');
  if (!assertion) throw new Error('no Assertion to encrypt');
  const cert = new X509Certificate(Buffer.from(certificate, 'base64'));
  const encryptedData = await new Promise<string>((resolve, reject) =>
    xmlEncryptionModule().encrypt(
      serialize(assertion),
      {
        rsa_pub: cert.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        pem: certificatePem(certificate),
        encryptionAlgorithm: CONTENT_ENCRYPTION,
        keyEncryptionAlgorithm: KEY_TRANSPORT,
        keyEncryptionDigest: 'sha1',
        disallowEncryptionWithInsecureAlgorithm: true,
      },
      (err, result) => (err || result === undefined ? reject(err ?? new Error('nothing encrypted')) : resolve(result)),
    ),
  );
  const data = parseUntrusted(encryptedData.trim(), encryptedData.length).documentElement;
  const wrapper = doc.createElementNS(NS.assertion, 'saml:EncryptedAssertion');
  wrapper.appendChild(doc.importNode(data, true));
  response.replaceChild(wrapper, assertion);
  return serialize(doc);
}
