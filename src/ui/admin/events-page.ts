/**
 * The console's event log: the stored audit events (`ctx.management.audit`, as
 * `/admin/v1/events`), newest first, filtered by event name, client and subject, a page at a
 * time with the log's opaque cursor ("older events").
 */
import { queryString } from '../../http/fields.js';
import type { SigilEvent } from '../../events/events.js';
import type { Console } from './console-page.js';

/** Events per page. */
const PAGE_SIZE = 50;
/** The longest filter value, characters. */
const MAX_FILTER = 255;

/** What the details column says of an event: its action and target, else its error. */
function details(e: SigilEvent): string {
  const parts = [
    e.action,
    e.target ? `${e.target.type} ${e.target.id}` : undefined,
    e.changes && Object.keys(e.changes).length > 0 ? Object.keys(e.changes).join(', ') : undefined,
    e.error,
  ];
  return parts.filter((p) => p !== undefined).join(' · ');
}

/** Registers GET `/admin/events`. */
export function eventsPage(admin: Console): void {
  const { ctx, app } = admin;
  app.get('/admin/events', async (request, reply) => {
    if (!(await admin.reader(request, reply))) return reply;
    const filter = (name: string) => {
      const v = queryString(request, name)?.trim() ?? '';
      return v.length <= MAX_FILTER && !/[\u0000-\u001f\u007f]/.test(v) ? v : '';
    };
    const filters = { type: filter('type'), client_id: filter('client_id'), subject: filter('subject') };
    const cursor = filter('cursor');
    let events: SigilEvent[] = [];
    let next: string | undefined;
    let error: string | undefined;
    try {
      const page = await ctx.management.audit.query({
        ...(filters.type ? { name: filters.type } : {}),
        ...(filters.client_id ? { clientId: filters.client_id } : {}),
        ...(filters.subject ? { subjectId: filters.subject } : {}),
        ...(cursor ? { cursor } : {}),
        limit: PAGE_SIZE,
      });
      events = page.events;
      if (page.next) {
        const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v !== ''));
        query.set('cursor', page.next);
        next = `${ctx.basePath}/admin/events?${query}`;
      }
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      error = refusal.message;
    }
    const rows = events.map((e) => ({
      time: e.time.replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC'),
      name: e.name,
      clientId: e.clientId ?? '',
      subjectId: e.subjectId ?? '',
      details: details(e),
    }));
    return admin.render(
      request,
      reply,
      'console-events',
      'events',
      { filters, events: rows, next, error },
      error ? 400 : 200,
    );
  });
}
