/**
 * The synchronous hooks (DESIGN §6b "Webhooks and hooks"): `preToken`, `postLogin` and
 * `preRegistration`. Each is a receiver of the config (`hooks.<name>`), POSTed the event as JSON
 * signed as Standard Webhooks sign event deliveries (`signing.ts`), under the SSRF guard
 * (`http/outbound.ts`: https, or plain http to loopback; no redirect followed), within its
 * `timeoutMs`, the answer read up to 64 KiB; or a function a library user passes to `createSigil`.
 *
 * The answer (`hook-answers.ts`) allows, allows with added claims (preToken), or denies. A call that
 * fails (connection error, timeout, a status other than 2xx, an answer too large, not JSON, not as
 * the schema says, or signed but not verifying with the hook's secret; a function that throws)
 * follows the hook's `onFailure`: `deny` refuses with a generic description, `continue` goes on
 * unchanged. No failure of a hook ever makes a request fail with a 500.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { HookName, HookReceiverConfig } from '../config/schema.js';
import { newId } from '../crypto/handles.js';
import { guardedPostReading } from '../http/outbound.js';
import { checkAnswer, type CheckedAnswer, type DenyAnswer, type PreTokenAnswer } from './hook-answers.js';
import { signatureHeaders } from './signing.js';

/** The largest answer read from a receiver, bytes; a larger one is a failure (and is not read further). */
export const MAX_HOOK_ANSWER_BYTES = 64 * 1024;

/** The description of a denial that a failed call (with `onFailure: deny`) gives. */
export const HOOK_FAILED_DESCRIPTION = 'the request could not be checked; try again later';
/** The description of a denial whose answer gave none. */
export const HOOK_DENIED_DESCRIPTION = 'the request was denied';

/** The client a hook event names. */
export interface HookClient {
  clientId: string;
  clientName: string | null;
}

/** What `preToken` is told: the tokens about to be issued. */
export interface PreTokenEvent {
  client: HookClient;
  /** The user's subject, or null for a client's own token (client_credentials). */
  subject: string | null;
  /** The scopes granted. */
  scopes: string[];
  /** The grant: `authorization_code` (asked at the authorization endpoint), `client_credentials`, ... */
  grantType: string;
  /** The organization signed in to, if any. */
  organization: { id: string; name: string } | null;
  /** The user's claims as Sigil holds them (profile); empty for a client's own token. */
  claims: Record<string, unknown>;
}

/** What `postLogin` is told: a user who passed the password (or upstream sign-in) and any second factor. */
export interface PostLoginEvent {
  subject: string;
  /** The client the sign-in is for, or null for a sign-in at the account pages. */
  client: HookClient | null;
  /** How the user signed in (RFC 8176 values). */
  amr: string[];
  /** The browser's address. */
  ip: string;
}

/**
 * What `preRegistration` is told: a self-registration (`kind: "user"`, the address the link is
 * about to be sent to) or a dynamic client registration (`kind: "client"`, its metadata as sent,
 * RFC 7591 §2).
 */
export type PreRegistrationEvent =
  | { kind: 'user'; email: string; ip: string }
  | { kind: 'client'; metadata: Record<string, unknown>; ip: string };

/** A hook a library user passes as a function: it answers as a receiver would (undefined allows). */
export type HookFunction<E, A> = (event: E) => A | undefined | Promise<A | undefined>;

/**
 * Hooks a library user passes to `createSigil` instead of receivers (`SigilOptions.hooks`). A
 * function that throws, or answers what the schema refuses, fails as a receiver does, and its
 * failure denies (a function has no `onFailure`).
 */
export interface HookFunctions {
  preToken?: HookFunction<PreTokenEvent, PreTokenAnswer>;
  postLogin?: HookFunction<PostLoginEvent, DenyAnswer>;
  preRegistration?: HookFunction<PreRegistrationEvent, DenyAnswer>;
}

/** How a hook call came out, as the metrics count it. */
export type HookOutcome = 'allowed' | 'denied' | 'failed_denied' | 'failed_continued';

/** What a hook decided: go on (with a preToken answer's added claims), or deny with a description. */
export type HookVerdict =
  | { allowed: true; accessToken: Record<string, unknown>; idToken: Record<string, unknown> }
  | { allowed: false; description: string };

const ALLOW: HookVerdict = { allowed: true, accessToken: {}, idToken: {} };

/** One hook: a receiver of the config or a function. */
type Hook = { receiver: HookReceiverConfig; agent: HttpAgent } | { fn: (event: unknown) => unknown };

/** Connections kept open to one receiver at most (its calls beyond wait for one). */
const MAX_CONNECTIONS = 64;
/** How long a kept connection may stay idle, milliseconds. */
const IDLE_MS = 3000;

/** The synchronous hooks of one provider. */
export class SyncHooks {
  private readonly hooks = new Map<HookName, Hook>();
  /** Told each call's outcome and duration in seconds (the hook metrics). */
  onOutcome: (hook: HookName, outcome: HookOutcome, seconds: number) => void = () => {};

  /**
   * @param receivers the config's `hooks`
   * @param functions a library user's hooks
   * @throws Error when a hook is both in the config and a function (which one holds would be a guess)
   */
  constructor(
    receivers: Partial<Record<HookName, HookReceiverConfig>>,
    functions: HookFunctions,
    private readonly log: Logger,
  ) {
    for (const [name, receiver] of Object.entries(receivers) as [HookName, HookReceiverConfig | undefined][])
      if (receiver) {
        // Kept-alive connections: a new connection per call would cost more than the call itself.
        // An idle one is closed after IDLE_MS, before a receiver's own idle timeout (Node's 5 s)
        // would close it under a call about to reuse it.
        const options = { keepAlive: true, maxSockets: MAX_CONNECTIONS, maxFreeSockets: 8, timeout: IDLE_MS };
        const agent = receiver.url.startsWith('https:') ? new HttpsAgent(options) : new HttpAgent(options);
        this.hooks.set(name, { receiver, agent });
      }
    for (const [name, fn] of Object.entries(functions) as [HookName, ((event: never) => unknown) | undefined][]) {
      if (!fn) continue;
      if (this.hooks.has(name))
        throw new Error(`hooks.${name} is set both in the config and in createSigil's options; keep one`);
      this.hooks.set(name, { fn: fn as (event: unknown) => unknown });
    }
  }

  /** Closes the connections kept open to the receivers. */
  close(): void {
    for (const hook of this.hooks.values()) if ('agent' in hook) hook.agent.destroy();
  }

  /** Whether `name` has a receiver or a function. */
  has(name: HookName): boolean {
    return this.hooks.has(name);
  }

  /** The hooks in force, for the tracing of their calls. */
  names(): HookName[] {
    return [...this.hooks.keys()];
  }

  /** Asks `preToken` before tokens are issued; allows unchanged when none is set. */
  preToken(event: PreTokenEvent): Promise<HookVerdict> {
    return this.ask('preToken', event);
  }

  /** Asks `postLogin` after a sign-in, before its session starts; allows when none is set. */
  postLogin(event: PostLoginEvent): Promise<HookVerdict> {
    return this.ask('postLogin', event);
  }

  /** Asks `preRegistration` before a self-registration or a dynamic client registration; allows when none is set. */
  preRegistration(event: PreRegistrationEvent): Promise<HookVerdict> {
    return this.ask('preRegistration', event);
  }

  private async ask(name: HookName, event: unknown): Promise<HookVerdict> {
    const hook = this.hooks.get(name);
    if (!hook) return ALLOW;
    const started = performance.now();
    const answer = await this.call(name, hook, event);
    const seconds = (performance.now() - started) / 1000;
    if (typeof answer === 'string') {
      const deny = 'fn' in hook || hook.receiver.onFailure === 'deny';
      this.log.warn({ hook: name, reason: answer, onFailure: deny ? 'deny' : 'continue' }, 'hook call failed');
      this.onOutcome(name, deny ? 'failed_denied' : 'failed_continued', seconds);
      return deny ? { allowed: false, description: HOOK_FAILED_DESCRIPTION } : ALLOW;
    }
    if (answer.kind === 'deny') {
      this.onOutcome(name, 'denied', seconds);
      return { allowed: false, description: answer.description || HOOK_DENIED_DESCRIPTION };
    }
    this.onOutcome(name, 'allowed', seconds);
    return { allowed: true, accessToken: answer.accessToken, idToken: answer.idToken };
  }

  /** One call: the checked answer, or why the call failed. */
  private async call(name: HookName, hook: Hook, event: unknown): Promise<CheckedAnswer | string> {
    let answer: unknown;
    if ('fn' in hook) {
      try {
        // A copy: the event holds the user's claims, which a function must not change under Sigil.
        answer = await hook.fn(structuredClone(event));
      } catch (err) {
        return `the function threw: ${err instanceof Error ? err.message : String(err)}`;
      }
    } else {
      // Whatever goes wrong on the way (an event a custom directory's claims make unserialisable,
      // say) is a failed call, never a 500.
      const received = await this.post(hook.receiver, hook.agent, event).catch(
        (err: unknown) => `the call could not be made: ${err instanceof Error ? err.message : String(err)}`,
      );
      if (typeof received === 'string') return received;
      answer = received.value;
    }
    return checkAnswer(name, answer) ?? 'the answer is not as the schema says';
  }

  /** POSTs the event to the receiver, signed; its parsed answer, or why there was none. */
  private async post(
    receiver: HookReceiverConfig,
    agent: HttpAgent,
    event: unknown,
  ): Promise<{ value: unknown } | string> {
    const id = `msg_${newId()}`;
    const payload = JSON.stringify(event);
    const headers = signatureHeaders(id, payload, { current: receiver.secret, retiring: [] }, new Date());
    let answer: Awaited<ReturnType<typeof guardedPostReading>>;
    try {
      answer = await guardedPostReading(
        new URL(receiver.url),
        payload,
        { 'content-type': 'application/json', accept: 'application/json', ...headers },
        // Plain http and loopback addresses are allowed for hooks (DESIGN §6b); private,
        // link-local and other special-use ones never.
        { timeoutMs: receiver.timeoutMs, maxBytes: MAX_HOOK_ANSWER_BYTES, allowLoopback: true },
        agent,
      );
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    if (answer.status < 200 || answer.status >= 300) return `the answer was HTTP ${answer.status}`;
    const body = answer.body.toString('utf8');
    const signature = answer.headers['webhook-signature'];
    // An answer the receiver signs must verify with the hook's secret and name the call's id, so
    // that neither a forged answer nor another call's answer replayed is taken.
    if (signature !== undefined) {
      const answerId = String(answer.headers['webhook-id'] ?? '');
      try {
        new Webhook(receiver.secret).verify(body, {
          'webhook-id': answerId,
          'webhook-timestamp': String(answer.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(signature),
        });
      } catch {
        return 'the answer is signed, but the signature does not verify';
      }
      if (answerId !== id) return 'the answer is signed for another call';
    }
    if (body.trim() === '') return { value: {} };
    try {
      return { value: JSON.parse(body) as unknown };
    } catch {
      return 'the answer is not JSON';
    }
  }
}
