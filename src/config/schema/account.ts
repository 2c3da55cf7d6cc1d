/**
 * Sign-in factors and self-service: `mfa`, `webauthn` (passkeys), the account pages (`account`)
 * and `email` (password reset, email verification, self-registration).
 */
import * as z from 'zod';
import { lifetime, nonEmpty } from './field-kinds.js';

/**
 * The profile claims a user may edit on /account/profile (config `account.editableClaims`): OIDC
 * Core §5.1 claims that describe the person and that no app should trust for access. Left out on
 * purpose: `sub`, `email`, `email_verified`, `phone_number(_verified)`, `preferred_username`
 * (apps may key on them), `role`, `tenant`, and URL claims (`picture`, `website`, `profile`).
 */
export const EDITABLE_CLAIMS = [
  'name',
  'given_name',
  'family_name',
  'middle_name',
  'nickname',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
] as const;

/** `mfa`: multi-factor sign-in. */
export const mfa = z
  .strictObject({
    required: z
      .boolean()
      .default(false)
      .meta({ description: "Default of every client's requireMfa: a second factor at every sign-in" }),
    totpIssuer: nonEmpty
      .max(100)
      .default('Sigil')
      .meta({ description: 'The issuer name authenticator apps show next to the account (otpauth URI issuer)' }),
    freshSignInSeconds: lifetime.default(300).meta({
      description:
        'How recent a sign-in must be to change factors on /account, seconds; a sign-in this recent with a second factor or passkey may also change the password without the current one',
    }),
  })
  .default({ required: false, totpIssuer: 'Sigil', freshSignInSeconds: 300 })
  .meta({ description: 'Multi-factor sign-in' });

/** `account`: self-service on /account: which profile claims stored users may edit themselves. */
export const account = z
  .strictObject({
    editableClaims: z
      .array(z.enum(EDITABLE_CLAIMS))
      .max(EDITABLE_CLAIMS.length)
      .refine((a) => new Set(a).size === a.length, 'each claim once')
      .default(['name', 'given_name', 'family_name'])
      .meta({
        description: `Profile claims stored users may edit on /account/profile, among ${EDITABLE_CLAIMS.join(', ')}; never sub, email, email_verified, role or other claims that apps may trust for access. Empty: no editing`,
        spec: 'OIDC Core §5.1',
      }),
  })
  .default({ editableClaims: ['name', 'given_name', 'family_name'] })
  .meta({ description: 'The account pages (/account)' });

/** `webauthn`: passkeys and security keys. */
export const webauthn = z
  .strictObject({
    enabled: z.boolean().default(false).meta({
      description:
        'Passkeys and security keys: /account/passkeys, the passkey button on the login page, security keys as factors',
    }),
    rpName: nonEmpty
      .max(64)
      .default('Sigil')
      .meta({ description: 'The name authenticators show next to the credential', spec: 'W3C WebAuthn L3 §5.4.2' }),
    challengeLifetime: lifetime
      .default(300)
      .meta({ description: 'How long a registration or sign-in challenge may be answered, seconds' }),
    challengesPerBrowser: z
      .number()
      .int()
      .positive()
      .default(30)
      .meta({ description: 'Challenges one browser may ask for per challengeLifetime (each is a stored row)' }),
    challengesPerAddress: z
      .number()
      .int()
      .positive()
      .default(300)
      .meta({ description: 'Challenges one address (an IPv6 /64) may ask for per challengeLifetime' }),
  })
  .default({
    enabled: false,
    rpName: 'Sigil',
    challengeLifetime: 300,
    challengesPerBrowser: 30,
    challengesPerAddress: 300,
  })
  .meta({
    description: "Passkeys and security keys; the relying party ID is the issuer's host name",
    spec: 'W3C WebAuthn L3 §5.1.3, §5.1.4',
  });

/** `email`: email through SMTP for password reset, email verification and self-registration. */
export const email = z
  .strictObject({
    transport: z.enum(['smtp', 'log']).default('smtp').meta({
      description:
        'smtp: send through `smtpUrl`. log: send nothing and write each message (its address, subject and link) to the output, for a demo or a laptop without a mail server',
    }),
    smtpUrl: z
      .url({ protocol: /^smtps?$/ })
      .optional()
      .meta({
        description:
          'The SMTP server (required with the smtp transport): smtp://host:port (STARTTLS when the server offers it; add ?requireTLS=true to insist) or smtps://host:port (TLS from the start); user and password in the URL when it asks for them',
      }),
    from: nonEmpty.max(200).optional().meta({
      description: 'The From of every message, e.g. "Acme ID <id@acme.example>" (required with the smtp transport)',
    }),
    passwordReset: z.boolean().default(true).meta({
      description:
        '"Forgot password?" on the login page: a single-use link by mail, valid 15 minutes, for stored users with a verified primary address',
    }),
    selfRegistration: z.boolean().default(false).meta({
      description:
        '/account/register: anyone may create an account with an email address; the password is chosen on the page the mailed link opens, and the account exists once that page is sent',
    }),
    requestsPerAddress: z
      .number()
      .int()
      .positive()
      .default(10)
      .meta({ description: 'Reset and registration forms one client address (an IPv6 /64) may send per hour' }),
    mailsPerAccount: z.number().int().positive().default(3).meta({
      description:
        'Messages one account or email address is sent per 15 minutes; more requests get the same answer but no mail',
    }),
  })
  .superRefine((e, ctx) => {
    if (e.transport !== 'smtp') return;
    for (const field of ['smtpUrl', 'from'] as const)
      if (e[field] === undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: 'required with the smtp transport' });
  })
  .optional()
  .meta({
    description:
      'Email through SMTP (or written to the output: `transport` log): password reset, email verification and self-registration. Without it no mail is sent and those pages do not exist',
  });
