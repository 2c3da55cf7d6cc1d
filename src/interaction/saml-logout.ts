/**
 * SAML Single Logout through the browser (SAML Profiles §4.4), both ways, over the session
 * participants of src/logout (a SAML SP joins a Sigil session when it is sent an assertion):
 * - An SP's LogoutRequest (`endSessionOfRequest`) ends the Sigil session it names, found by its
 *   SessionIndex (the session's `sid`, as Sigil asserted it) or else this browser's session, and
 *   only when the NameID is the one Sigil gave that SP in that session: a request naming another
 *   principal ends nothing. Ending it runs the OIDC logout (back-channel logout tokens, front-channel
 *   frames) like any other end.
 * - The session's other SAML SPs are then sent LogoutRequests one after the other through the
 *   browser (`startSamlLogout`, `continueSamlLogout`), as Keycloak chains them: the browser goes to
 *   the SP's single logout endpoint with a signed request, the SP ends its own session and sends
 *   the browser back to /saml/slo with its LogoutResponse, which must answer the request Sigil sent
 *   (InResponseTo, the SP, RelayState naming the chain); then the next SP, and at the end the
 *   LogoutResponse to the SP that asked (§4.4.3.4) or Sigil's signed-out page. A redirect chain,
 *   not iframes: mod_auth_mellon's logout endpoint answers HTTP-Redirect (or SOAP) only, and its
 *   session cookie would not ride a third-party frame. An SP that never answers leaves the browser
 *   there; the Sigil session has ended before the first SP is visited.
 */
import type { Services } from '../services.js';
import { newHandle } from '../crypto/handles.js';
import type { EndedSession } from '../logout/logout.js';
import type { OutgoingMessage } from '../saml/binding.js';
import type { LogoutRequestIn, LogoutResponseIn } from '../saml/logout-messages.js';
import type { SamlLogoutChain, SamlLogoutFinish } from '../stores/records/saml-logouts.js';
import type { SamlParticipation } from '../stores/types.js';

/** The services this module uses. */
export type SamlLogoutServices = Pick<Services, 'logout' | 'saml' | 'store'>;

/** How long a logout chain waits for an SP's LogoutResponse, seconds. */
const CHAIN_LIFETIME = 600;

/** The next step of a single logout in the browser: a message to an SP, or the end. */
export type SamlLogoutStep =
  | { kind: 'send'; message: OutgoingMessage }
  | { kind: 'finish'; finish: SamlLogoutFinish; lang: string };

/**
 * Ends the session an SP's checked LogoutRequest names (see the module comment).
 * @param browserSid the sid of this browser's live session, if any
 * @returns what ending it did, or undefined when no session of that principal with that SP is
 *   live (nothing is ended)
 */
export async function endSessionOfRequest(
  ctx: SamlLogoutServices,
  request: LogoutRequestIn,
  browserSid: string | undefined,
): Promise<EndedSession | undefined> {
  const candidates = request.sessionIndexes.length > 0 ? request.sessionIndexes : browserSid ? [browserSid] : [];
  for (const sid of candidates) {
    const participation = await ctx.logout.samlParticipant(sid, request.sp.entityId);
    if (participation && sameNameId(participation, request)) return ctx.logout.endSession(sid, { browser: true });
  }
  return undefined;
}

/**
 * Whether the request names the principal Sigil asserted (SAML Core §3.7.3.1: the NameID of the
 * session): the same value, and the same Format and SPNameQualifier where the request gives them.
 */
function sameNameId(p: SamlParticipation, request: LogoutRequestIn): boolean {
  const n = request.nameId;
  return (
    n.value === p.nameId &&
    (n.format === undefined || n.format === p.format) &&
    (n.spNameQualifier === undefined || n.spNameQualifier === p.spNameQualifier)
  );
}

/**
 * Starts sending LogoutRequests to `participants` (those still registered with a single logout
 * endpoint), one at a time, the chain stored under the RelayState handle.
 * @param now Unix seconds
 * @returns the first LogoutRequest, or the end when there is none to send
 */
export async function startSamlLogout(
  ctx: SamlLogoutServices,
  participants: readonly SamlParticipation[],
  lang: string,
  finish: SamlLogoutFinish,
  now: number,
): Promise<SamlLogoutStep> {
  const handle = newHandle();
  const next = nextRequest(ctx, participants, handle, now);
  if (!next) return { kind: 'finish', finish, lang };
  await ctx.store.records.samlLogouts.put(
    handle,
    { remaining: next.remaining, awaiting: next.awaiting, lang, finish },
    now,
    now + CHAIN_LIFETIME,
  );
  return { kind: 'send', message: next.message };
}

/**
 * Moves a chain on after an SP's checked LogoutResponse: the next LogoutRequest, or the end. An SP
 * that answers other than Success has still been asked; the chain goes on (§4.4.3.4 leaves the
 * outcome to the IdP, and the Sigil session has ended).
 * @returns undefined when the response answers no request of a live chain (its RelayState, SP and
 *   InResponseTo), or a request already answered
 */
export async function continueSamlLogout(
  ctx: SamlLogoutServices,
  response: LogoutResponseIn,
  now: number,
): Promise<SamlLogoutStep | undefined> {
  const handle = response.relayState;
  if (handle === undefined) return undefined;
  const chains = ctx.store.records.samlLogouts;
  const chain = (await chains.findLive(handle, now))?.data;
  if (chain?.awaiting.entityId !== response.sp.entityId || chain.awaiting.requestId !== response.inResponseTo)
    return undefined;
  const next = nextRequest(ctx, chain.remaining, handle, now);
  if (next) {
    const moved: SamlLogoutChain = { ...chain, remaining: next.remaining, awaiting: next.awaiting };
    return (await chains.advance(handle, chain, moved)) ? { kind: 'send', message: next.message } : undefined;
  }
  return (await chains.consume(handle, now)) ? { kind: 'finish', finish: chain.finish, lang: chain.lang } : undefined;
}

/** The LogoutRequest to the first of `participants` that can be sent one, and those after it. */
function nextRequest(
  ctx: SamlLogoutServices,
  participants: readonly SamlParticipation[],
  handle: string,
  now: number,
): { message: OutgoingMessage; awaiting: SamlLogoutChain['awaiting']; remaining: SamlParticipation[] } | undefined {
  for (const [i, p] of participants.entries()) {
    const sent = ctx.saml.logoutRequest(p, handle, now);
    if (sent)
      return {
        message: sent.message,
        awaiting: { entityId: p.entityId, requestId: sent.id },
        remaining: participants.slice(i + 1),
      };
  }
  return undefined;
}
