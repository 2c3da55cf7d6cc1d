/**
 * Synchronous hooks (DESIGN §6b "Webhooks and hooks"): `hooks.preToken`, `hooks.postLogin` and
 * `hooks.preRegistration`, each a receiver Sigil POSTs to (Standard Webhooks signed, as event
 * webhooks are) and waits for: it may add claims to the tokens (preToken) or deny. A library user
 * may pass functions instead (`createSigil(config, { hooks })`).
 */
import * as z from 'zod';
import { httpsOrLoopback } from './field-kinds.js';
import { isWebhookSecret, MAX_WEBHOOK_URL } from './webhooks.js';

/** The names of the synchronous hooks. */
export const HOOK_NAMES = ['preToken', 'postLogin', 'preRegistration'] as const;
/** One of `HOOK_NAMES`. */
export type HookName = (typeof HOOK_NAMES)[number];

/** The default and the bounds of a hook's `timeoutMs`, milliseconds. */
export const HOOK_TIMEOUT = { default: 2000, min: 100, max: 10000 };

/** One hook's receiver. */
export const hookReceiver = z.strictObject({
  url: httpsOrLoopback
    .refine((u) => u.length <= MAX_WEBHOOK_URL, 'too long')
    .meta({
      description:
        'Where the hook is POSTed: https, or plain http on a loopback host; never a private, link-local or other special-use address (checked at each call). Redirects are not followed',
    }),
  secret: z.string().refine(isWebhookSecret, 'must be whsec_ and the base64 of 24 to 64 random bytes').meta({
    description:
      'The Standard Webhooks secret that signs each call (and verifies an answer the receiver signs): whsec_ and the base64 of 24 to 64 random bytes (usually { "$env": ... } or { "$file": ... })',
    spec: 'Standard Webhooks §Signature scheme',
  }),
  timeoutMs: z
    .int()
    .min(HOOK_TIMEOUT.min)
    .max(HOOK_TIMEOUT.max)
    .default(HOOK_TIMEOUT.default)
    .meta({ description: 'The whole call (connecting, sending, reading the answer), milliseconds' }),
  onFailure: z.enum(['deny', 'continue']).default('deny').meta({
    description:
      'What a failed call does (no answer in time, a connection error, a status other than 2xx, a malformed or wrongly signed answer, an answer over 64 KiB): deny (the request is refused with a generic description) or continue (it goes on unchanged)',
  }),
});

/** A hook's receiver, defaults filled in. */
export type HookReceiverConfig = z.output<typeof hookReceiver>;

/** `hooks`: the receivers of the synchronous hooks. */
export const hooks = z
  .strictObject({
    preToken: hookReceiver.optional().meta({
      description:
        'Asked before tokens are issued (every grant; for the authorization code flow at the authorization endpoint, after sign-in and consent): may add access-token and identity-token claims, or deny',
    }),
    postLogin: hookReceiver.optional().meta({
      description:
        'Asked after the password and second factor (or upstream sign-in), before consent and before the session starts: may deny',
    }),
    preRegistration: hookReceiver.optional().meta({
      description: 'Asked before a self-registration link is sent and before a dynamic client registration: may deny',
    }),
  })
  .default({})
  .meta({
    description:
      'Synchronous hooks, signed as Standard Webhooks; see docs/webhooks-and-hooks.md for the events and answers',
  });
