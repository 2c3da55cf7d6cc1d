/**
 * The console's SAML service provider page templates (Eta, escaped by default; replaceable by name
 * through `branding.templatesDir` like every page): the list with the registration form (metadata
 * XML pasted, a metadata URL, or the settings; a refused field marked on the field, `aria-invalid`
 * and its message by `aria-describedby`), and one SP's page: its settings, what its metadata put
 * in force, and (stored SPs only) the edit form with every setting and the delete form, each
 * carrying the version the page was read at (`it.etag`, `sp.etag`).
 */
import { MAX_ENTITY_ID_LENGTH, MAX_SP_METADATA_LENGTH, SAML_NAME_ID_FORMATS } from '../../config/schema.js';
import { NOTICE } from './templates.js';
import { described, fieldError } from './webhook-templates.js';

const SOURCE = `<%= sp.source === 'config' ? it.t.consoleSourceConfig : it.t.consoleSourceStore %>`;
const YES_NO = (value: string) => `<%= ${value} ? it.t.consoleYes : it.t.consoleNo %>`;

/**
 * A checkbox of the registration form with its refusal, checked before the form was sent when
 * `byDefault`.
 */
function check(name: string, label: string, byDefault: boolean): string {
  const checked = byDefault ? `!it.form.submitted || it.form.${name}` : `it.form.${name}`;
  const id = `sp-${name}`;
  return `<label class="check"><input type="checkbox" id="${id}" name="${name}" value="yes"<% if (${checked}) { %> checked<% } %>${described(id, name)}> <%= it.t.${label} %></label>
${fieldError(id, name)}`;
}

/** The entity ID field of the registration form (an SP's entity ID never changes afterwards). */
const ENTITY_ID = `<label for="sp-entity-id"><%= it.t.consoleSamlEntityId %></label>
<input type="text" id="sp-entity-id" name="entityId" value="<%= it.form.entityId || '' %>" maxlength="${MAX_ENTITY_ID_LENGTH}" autocomplete="off" spellcheck="false"${described('sp-entity-id', 'entityId')}>
${fieldError('sp-entity-id', 'entityId')}
`;

/**
 * The settings fields of the registration form and of a stored SP's edit form (the metadata, then
 * the settings of a `samlServiceProviders` entry), each refusal marked on its field; `it.form`
 * holds the values shown: what was sent, or the SP's settings.
 * @param entityId the entity ID field, where it may be given
 */
function settingsFields(entityId: string): string {
  return `<label for="sp-metadata-xml"><%= it.t.consoleSamlMetadataXml %></label>
<textarea id="sp-metadata-xml" name="metadataXml" rows="6" maxlength="${MAX_SP_METADATA_LENGTH}" spellcheck="false"${described('sp-metadata-xml', 'metadataXml')}><%= it.form.metadataXml || '' %></textarea>
${fieldError('sp-metadata-xml', 'metadataXml')}
<label for="sp-metadata-url"><%= it.t.consoleSamlMetadataUrl %></label>
<input type="url" id="sp-metadata-url" name="metadataUrl" value="<%= it.form.metadataUrl || '' %>" maxlength="2000" autocomplete="off" spellcheck="false"${described('sp-metadata-url', 'metadataUrl')}>
${fieldError('sp-metadata-url', 'metadataUrl')}
<fieldset><legend><%= it.t.consoleSamlSettings %></legend>
${entityId}<label for="sp-acs-urls"><%= it.t.consoleSamlAcsUrls %></label>
<textarea id="sp-acs-urls" name="acsUrls" rows="2" maxlength="8000" spellcheck="false"${described('sp-acs-urls', 'acsUrls')}><%= it.form.acsUrls || '' %></textarea>
${fieldError('sp-acs-urls', 'acsUrls')}
<label for="sp-slo-url"><%= it.t.consoleSamlSloUrl %></label>
<input type="url" id="sp-slo-url" name="sloUrl" value="<%= it.form.sloUrl || '' %>" maxlength="2000" autocomplete="off" spellcheck="false"${described('sp-slo-url', 'sloUrl')}>
${fieldError('sp-slo-url', 'sloUrl')}
<label for="sp-display-name"><%= it.t.consoleDisplayName %></label>
<input type="text" id="sp-display-name" name="displayName" value="<%= it.form.displayName || '' %>" maxlength="200" autocomplete="off"${described('sp-display-name', 'displayName')}>
${fieldError('sp-display-name', 'displayName')}
<label for="sp-name-id-format"><%= it.t.consoleSamlNameIdFormat %></label>
<select id="sp-name-id-format" name="nameIdFormat"${described('sp-name-id-format', 'nameIdFormat')}>
${SAML_NAME_ID_FORMATS.map((f) => `<option value="${f}"<% if ((it.form.nameIdFormat || 'persistent') === '${f}') { %> selected<% } %>>${f}</option>`).join('')}
</select>
${fieldError('sp-name-id-format', 'nameIdFormat')}
<label for="sp-attributes"><%= it.t.consoleSamlAttributes %></label>
<p class="hint" id="sp-attributes-hint"><%= it.t.consoleSamlAttributesHint %></p>
<textarea id="sp-attributes" name="attributes" rows="3" maxlength="8000" spellcheck="false" aria-describedby="sp-attributes-hint<% if (it.fields && it.fields.attributes) { %> sp-attributes-error<% } %>"<% if (it.fields && it.fields.attributes) { %> aria-invalid="true"<% } %>><%= it.form.attributes || '' %></textarea>
${fieldError('sp-attributes', 'attributes')}
<label for="sp-organization"><%= it.t.consoleSamlOrganization %></label>
<p class="hint" id="sp-organization-hint"><%= it.t.consoleSamlOrganizationHint %></p>
<input type="text" id="sp-organization" name="organization" value="<%= it.form.organization || '' %>" maxlength="64" autocomplete="off" spellcheck="false" aria-describedby="sp-organization-hint<% if (it.fields && it.fields.organization) { %> sp-organization-error<% } %>"<% if (it.fields && it.fields.organization) { %> aria-invalid="true"<% } %>>
${fieldError('sp-organization', 'organization')}
${check('signResponse', 'consoleSamlSignResponse', true)}
${check('signAssertion', 'consoleSamlSignAssertion', true)}
${check('encryptAssertion', 'consoleSamlEncryptAssertion', false)}
${check('requireSignedAuthnRequests', 'consoleSamlRequireSigned', false)}
${check('requireConsent', 'consoleSamlRequireConsent', false)}
</fieldset>`;
}

const LIST = `<% layout('@console-layout', { title: it.t.consoleSamlServiceProviders }) %>
<h1><%= it.t.consoleSamlServiceProviders %></h1>
${NOTICE}
<table>
<caption><%= it.t.consoleSamlList %></caption>
<thead><tr><th scope="col"><%= it.t.consoleSamlEntityId %></th><th scope="col"><%= it.t.consoleDisplayName %></th><th scope="col"><%= it.t.consoleSamlAcsUrls %></th><th scope="col"><%= it.t.consoleSource %></th></tr></thead>
<tbody>
<% it.serviceProviders.forEach(function (sp) { %><tr><td><a href="<%= it.base %>/admin/saml-service-providers/<%= encodeURIComponent(sp.entityId) %>"><%= sp.entityId %></a></td><td><%= sp.displayName || '' %></td><td><% sp.effective.acsUrls.forEach(function (u) { %><code><%= u %></code> <% }) %></td><td>${SOURCE}</td></tr>
<% }) %><% if (it.serviceProviders.length === 0) { %><tr><td colspan="4"><%= it.t.consoleNone %></td></tr><% } %>
</tbody>
</table>
<h2 id="register-sp"><%= it.t.consoleSamlRegister %></h2>
<p id="register-sp-hint"><%= it.t.consoleSamlRegisterHint %></p>
<form method="post" action="<%= it.base %>/admin/saml-service-providers" aria-labelledby="register-sp" aria-describedby="register-sp-hint">
<%~ include('@csrf', it) %>
${settingsFields(ENTITY_ID)}
<div class="actions"><button type="submit" name="button" value="create" class="primary"><%= it.t.consoleSamlRegister %></button></div>
</form>`;

const ONE = `<% layout('@console-layout', { title: it.serviceProvider.entityId }) %>
<% const sp = it.serviceProvider, at = it.base + '/admin/saml-service-providers/' + encodeURIComponent(sp.entityId) %>
<p><a href="<%= it.base %>/admin/saml-service-providers"><%= it.t.consoleBackToSaml %></a></p>
<h1><%= sp.displayName || sp.entityId %></h1>
${NOTICE}
<dl>
<dt><%= it.t.consoleSamlEntityId %></dt><dd><code><%= sp.entityId %></code></dd>
<dt><%= it.t.consoleSource %></dt><dd>${SOURCE}</dd>
<dt><%= it.t.consoleSamlAcsUrls %></dt><dd><% sp.effective.acsUrls.forEach(function (u) { %><code><%= u %></code> <% }) %></dd>
<dt><%= it.t.consoleSamlSloUrl %></dt><dd><% if (sp.effective.sloUrl) { %><code><%= sp.effective.sloUrl %></code><% } else { %><%= it.t.consoleNone %><% } %></dd>
<dt><%= it.t.consoleSamlNameIdFormat %></dt><dd><code><%= sp.nameIdFormat %></code></dd>
<dt><%= it.t.consoleSamlAttributes %></dt><dd><% const attrs = Object.entries(sp.attributes); attrs.forEach(function (a) { %><code><%= a[0] %> = <%= a[1] %></code> <% }) %><% if (attrs.length === 0) { %><%= it.t.consoleNone %><% } %></dd>
<dt><%= it.t.consoleSamlSignResponse %></dt><dd>${YES_NO('sp.signResponse')}</dd>
<dt><%= it.t.consoleSamlSignAssertion %></dt><dd>${YES_NO('sp.effective.signAssertion')}</dd>
<dt><%= it.t.consoleSamlRequireSigned %></dt><dd>${YES_NO('sp.effective.requireSignedAuthnRequests')}</dd>
<dt><%= it.t.consoleSamlRequireConsent %></dt><dd>${YES_NO('sp.requireConsent')}</dd>
<dt><%= it.t.consoleSamlEncryptAssertion %></dt><dd>${YES_NO('sp.encryptAssertion')}</dd>
<dt><%= it.t.consoleSamlOrganization %></dt><dd><% if (sp.organization) { %><code><%= sp.organization %></code><% } else { %><%= it.t.consoleNone %><% } %></dd>
<dt><%= it.t.consoleSamlCertificates %></dt><dd><%= sp.effective.signingCertificates %></dd>
</dl>
<% if (sp.source === 'config') { %><% if (sp.metadataXml) { %><details><summary><%= it.t.consoleSamlMetadataXml %></summary><pre><code><%= sp.metadataXml %></code></pre></details><% } %>
<p class="notice" role="note"><%= it.t.consoleSamlReadOnly %></p><% } else { %>
<h2 id="edit-sp"><%= it.t.consoleSamlEdit %></h2>
<p id="edit-sp-hint"><%= it.t.consoleSamlEditHint %></p>
<form method="post" action="<%= at %>" aria-labelledby="edit-sp" aria-describedby="edit-sp-hint">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= it.etag %>">
${settingsFields('')}
<div class="actions"><button type="submit" name="button" value="save" class="primary"><%= it.t.consoleSamlSave %></button></div>
</form>
<div class="actions"><form method="post" action="<%= at %>/delete" class="inline">
<%~ include('@csrf', it) %>
<input type="hidden" name="etag" value="<%= sp.etag %>">
<button type="submit" name="button" value="delete"><%= it.t.consoleSamlDelete %></button>
</form></div><% } %>`;

/** The SAML service provider templates by page name. */
export const SAML_TEMPLATES: Readonly<Record<string, string>> = {
  'console-saml-service-providers': LIST,
  'console-saml-service-provider': ONE,
};
