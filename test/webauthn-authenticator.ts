/**
 * A software WebAuthn authenticator for the HTTP tests (no browser): it answers Sigil's options
 * with `PublicKeyCredential.toJSON()`-shaped responses (W3C WebAuthn L3 §6.1 authenticator data,
 * §6.5.4 `none` attestation, §6.3.3 assertion signature over authData || SHA-256(clientDataJSON)),
 * with ES256 keys from node:crypto and CBOR from @simplewebauthn's helpers. Every field can be
 * bent (origin, RP ID, flags, counter) to craft the responses Sigil must refuse.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

/** One credential the authenticator holds. */
export interface SoftCredential {
  id: string;
  key: KeyObject;
  /** The user handle (base64url) given at registration. */
  userHandle: string;
  counter: number;
}

/** What a response may be bent with. */
export interface Bend {
  origin?: string;
  rpId?: string;
  /** Authenticator data flags; default UP (0x01) plus UV (0x04) when the authenticator verifies users. */
  flags?: number;
  /** Signature counter to report instead of the next one. */
  counter?: number;
}

const b64u = (b: Uint8Array) => Buffer.from(b).toString('base64url');
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest();

/** A software authenticator bound to an origin. */
export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];

  /**
   * @param origin the page origin the browser would report (the issuer's)
   * @param userVerification whether it sets UV (a passkey authenticator) or only UP (a plain security key)
   */
  constructor(
    readonly origin: string,
    readonly userVerification = true,
  ) {}

  private authData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
    const c = Buffer.alloc(4);
    c.writeUInt32BE(counter);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), c, ...(attested ? [attested] : [])]);
  }

  private defaultFlags(): number {
    return this.userVerification ? 0x05 : 0x01;
  }

  /** Creates a credential for `options` (navigator.credentials.create). */
  register(options: PublicKeyCredentialCreationOptionsJSON, bend: Bend = {}): RegistrationResponseJSON {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x as string, 'base64url')],
        [-3, Buffer.from(jwk.y as string, 'base64url')],
      ]),
    );
    const id = randomBytes(16);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, id, Buffer.from(cose)]);
    const credential: SoftCredential = { id: b64u(id), key: privateKey, userHandle: options.user.id, counter: 0 };
    const authData = this.authData(
      bend.rpId ?? options.rp.id ?? '',
      (bend.flags ?? this.defaultFlags()) | 0x40,
      bend.counter ?? 0,
      attested,
    );
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Uint8Array | Map<string, string>>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, string>()],
        ['authData', authData],
      ]),
    );
    const clientData = JSON.stringify({
      type: 'webauthn.create',
      challenge: options.challenge,
      origin: bend.origin ?? this.origin,
      crossOrigin: false,
    });
    this.credentials.push(credential);
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64u(Buffer.from(clientData)),
        attestationObject: b64u(attestationObject),
        transports: ['usb'],
      },
      clientExtensionResults: {},
    };
  }

  /** Signs `options`' challenge with a credential (navigator.credentials.get); the counter grows by one. */
  authenticate(
    options: PublicKeyCredentialRequestOptionsJSON,
    credential: SoftCredential | undefined = this.credentials[0],
    bend: Bend = {},
  ): AuthenticationResponseJSON {
    if (!credential) throw new Error('no credential');
    credential.counter += 1;
    const authData = this.authData(
      bend.rpId ?? options.rpId ?? '',
      bend.flags ?? this.defaultFlags(),
      bend.counter ?? credential.counter,
    );
    const clientData = Buffer.from(
      JSON.stringify({
        type: 'webauthn.get',
        challenge: options.challenge,
        origin: bend.origin ?? this.origin,
        crossOrigin: false,
      }),
    );
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), credential.key);
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64u(clientData),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        userHandle: credential.userHandle,
      },
      clientExtensionResults: {},
    };
  }
}
