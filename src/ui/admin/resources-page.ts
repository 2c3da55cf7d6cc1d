/**
 * The console's resources page: the identity resources, API scopes, API resources and upstream
 * identity providers in force on this node (`ctx.resources`, `ctx.upstream`), read-only, each
 * with its source: the config file, stored (managed through /admin/v1), or built in (Sigil's
 * management API).
 */
import type { Console } from './console-page.js';

/** Registers GET `/admin/resources`. */
export function resourcesPage(admin: Console): void {
  const { ctx, app } = admin;
  app.get('/admin/resources', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const t = (key: Parameters<Console['text']>[1]) => admin.text(request, key);
    const label = { 'built-in': t('consoleSourceBuiltIn'), config: t('consoleSourceConfig'), store: t('consoleSourceStore') };
    const source = (map: 'identity' | 'apiScopes' | 'apiResources', name: string) => label[ctx.resources.sourceOf(map, name) ?? 'config'];
    const tables = [
      {
        caption: t('consoleIdentityResources'),
        detailHeading: t('consoleClaims'),
        rows: [...ctx.resources.identity.values()].map((r) => ({ name: r.name, detail: r.userClaims.join(', '), source: source('identity', r.name) })),
      },
      {
        caption: t('consoleApiScopes'),
        detailHeading: t('consoleClaims'),
        rows: [...ctx.resources.apiScopes.values()].map((s) => ({ name: s.name, detail: s.userClaims.join(', '), source: source('apiScopes', s.name) })),
      },
      {
        caption: t('consoleApiResources'),
        detailHeading: t('consoleScopes'),
        rows: ctx.resources.apiResources.map((r) => ({ name: r.name, detail: r.scopes.join(', '), source: source('apiResources', r.name) })),
      },
      {
        caption: t('consoleUpstreamProviders'),
        detailHeading: t('consoleAuthority'),
        rows: ctx.upstream.all().map((p) => ({ name: p.name, detail: p.authority, source: label[ctx.upstream.sourceOf(p.name) ?? 'config'] })),
      },
    ];
    return admin.render(request, reply, 'console-resources', 'resources', { tables });
  });
}
