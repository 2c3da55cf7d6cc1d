/**
 * Front-channel logout (OIDC Front-Channel Logout 1.0 §3): the signed-out page loads each
 * participating client's `frontChannelLogoutUri` in a hidden iframe, with `iss` and `sid`.
 */
import type { ClientConfig } from '../config/schema.js';

/** The iframe URLs for a session's clients (those with a `frontChannelLogoutUri`). */
export function frontChannelFrames(
  issuer: string,
  sid: string,
  clients: readonly Pick<ClientConfig, 'frontChannelLogoutUri'>[],
): string[] {
  const frames: string[] = [];
  for (const client of clients) {
    if (!client.frontChannelLogoutUri) continue;
    const url = new URL(client.frontChannelLogoutUri);
    // §2: `iss` and `sid` let the client find the session; Sigil sends them to every client.
    url.searchParams.set('iss', issuer);
    url.searchParams.set('sid', sid);
    frames.push(url.toString());
  }
  return frames;
}

/**
 * The CSP `frame-src` value allowing exactly these frames: each URL without its query (CSP source
 * expressions match scheme, host, port and path), or `'none'` when there are none.
 */
export function frameSources(frames: readonly string[]): string {
  if (frames.length === 0) return "'none'";
  const sources = frames.map((f) => {
    const url = new URL(f);
    // `;` and `,` would end the directive or the source list.
    return `${url.origin}${url.pathname.replace(/;/g, '%3B').replace(/,/g, '%2C')}`;
  });
  return [...new Set(sources)].join(' ');
}
