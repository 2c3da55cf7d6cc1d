/**
 * The page of an invitation to an organization (route in ui/invitations.ts): the organization's
 * display name, then either the way to sign in (`signInPath`, which returns to this page; and to sign up, when self-registration is on)
 * or, for a signed-in user, the form that accepts (`button=accept`, CSRF-checked).
 */

/** One template: `signedIn` chooses the form; texts from the catalogues of `locales/`. */
const INVITATION = `<% layout('@layout', { lang: it.lang, title: it.t.invitationTitle }) %>
<h1><%= it.t.invitationTitle %></h1>
<% if (it.signedIn) { %><p><%= it.f(it.t.invitationIntro, it.values) %></p>
<form method="post" action="<%= it.base %>/account/invitations/<%= it.token %>">
<input type="hidden" name="csrf_token" value="<%= it.csrf %>">
<div class="actions"><button type="submit" class="primary" name="button" value="accept"><%= it.t.invitationAccept %></button></div>
</form><% } else { %><p><%= it.f(it.t.invitationSignInFirst, it.values) %></p>
<p><a href="<%= it.base %><%= it.signInPath %>"><%= it.t.signIn %></a></p>
<% if (it.signUp) { %><p><a href="<%= it.base %>/account/register"><%= it.t.invitationSignUp %></a></p><% } %><% } %>`;

/** Templates by name (`@invitation`), registered by the route. */
export const INVITATION_TEMPLATES: Readonly<Record<string, string>> = { invitation: INVITATION };
