/**
 * The SAML signing key: an RSA key pair with a self-signed X.509 certificate, since SAML metadata
 * names a signing key by its certificate (SAML Metadata §2.4.1.1, KeyDescriptor). Made with
 * @peculiar/x509 over WebCrypto (node:crypto reads certificates but makes none); stored as any
 * other key (keys.ts), its certificate in the public JWK's `x5c` (RFC 7517 §4.7).
 */
import { createPrivateKey, type JsonWebKey, type KeyObject, webcrypto } from 'node:crypto';
import { createRequire } from 'node:module';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { newHandle } from '../crypto/handles.js';

/**
 * @peculiar/x509, loaded when a SAML key is first made: only a config with SAML on makes one, and
 * the module (with tsyringe and the ASN.1 schemas it sets up) cost every start tens of
 * milliseconds. It resolves its algorithms through tsyringe, which needs the Reflect metadata API
 * first.
 */
function x509(): typeof import('@peculiar/x509') {
  const load = createRequire(import.meta.url);
  load('reflect-metadata');
  return load('@peculiar/x509') as typeof import('@peculiar/x509');
}

/** The key kind ("algorithm" in the key store) of the SAML signing key; never published in the JWKS. */
export const SAML_KEY_KIND = 'saml-rsa';

/**
 * How long a SAML certificate is valid, seconds (ten years). The key's life is governed by rotation
 * (`signingKeys`), not by the certificate: SAML metadata consumers trust the key the metadata
 * carries, not a certificate chain (SAML V2.0 Metadata Interoperability Profile §2.5.1 has them
 * ignore expiry), but some SPs still refuse an expired certificate, so it never expires in use.
 */
const CERTIFICATE_LIFETIME = 10 * 365 * 24 * 3600;

/** A new SAML signing key: the public JWK with the certificate in `x5c`, the private JWK, the `kid`. */
export async function generateSamlKey(now: number): Promise<{ kid: string; publicJwk: JWK; privateJwk: JWK }> {
  const { BasicConstraintsExtension, KeyUsageFlags, KeyUsagesExtension, X509CertificateGenerator } = x509();
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
  const cert = await X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: `01${Buffer.from(newHandle(), 'base64url').subarray(0, 15).toString('hex')}`,
      name: [{ CN: ['Sigil SAML signing'] }],
      notBefore: new Date((now - 300) * 1000),
      notAfter: new Date((now + CERTIFICATE_LIFETIME) * 1000),
      signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as Algorithm,
      keys: { privateKey, publicKey } as CryptoKeyPair,
      extensions: [
        new BasicConstraintsExtension(false, undefined, true),
        new KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
      ],
    },
    webcrypto as unknown as Crypto,
  );
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    publicJwk: { ...publicJwk, x5c: [Buffer.from(cert.rawData).toString('base64')] },
    privateJwk: await exportJWK(privateKey),
  };
}

/** The certificate (base64 DER) of a SAML key's public JWK. */
export function certificateOf(publicJwk: Record<string, unknown>): string {
  const x5c = publicJwk.x5c;
  if (!Array.isArray(x5c) || typeof x5c[0] !== 'string') throw new Error('a SAML key without its certificate');
  return x5c[0];
}

/** A private JWK as a node:crypto key, which xml-crypto signs with. */
export function privateKeyObject(jwk: JWK): KeyObject {
  return createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' });
}
