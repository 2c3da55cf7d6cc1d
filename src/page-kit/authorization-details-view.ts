/**
 * How a page shows a request's authorization details (RFC 9396 §2): the consent page and the CIBA
 * approval page show the same thing the same way, a heading in the page's language, then each
 * object's `type` and the object as the client sent it, pretty-printed JSON. Eta escapes both like
 * any other text, so an object's strings never become markup.
 */

/** One authorization details object as a page shows it. */
export interface ShownDetail {
  type: string;
  /** The whole object, as the client sent it, indented JSON. */
  json: string;
}

/** The objects of `details` (absent: none) as a page shows them. */
export function shownDetails(details: readonly { type: string }[] | undefined): ShownDetail[] {
  return (details ?? []).map((d) => ({ type: d.type, json: JSON.stringify(d, null, 2) }));
}

/**
 * The template fragment that lists `ShownDetail`s under the `consentDetails` heading, nothing when
 * there are none.
 * @param list the template expression holding the `ShownDetail[]` (`it.details`, `r.details`)
 */
export function authorizationDetailsFragment(list: string): string {
  return `<% if (${list} && ${list}.length > 0) { %><p><%= it.t.consentDetails %></p>
<ul class="authorization-details"><% ${list}.forEach(function (d) { %><li><strong><%= d.type %></strong><pre><code><%= d.json %></code></pre></li><% }) %></ul><% } %>`;
}
