/**
 * The console's event log: the stored audit events (`ctx.management.audit`, as
 * `/admin/v1/events`), newest first, filtered by event name, client and subject, a page at a
 * time with the log's opaque cursor ("older events"). A row names its user by username and its
 * client by its name (each linked to its console page, the id kept beside), and its details say
 * what was done, to what, from where and with which browser, as words rather than field names.
 */
import { queryString } from '../../http/fields.js';
import type { SigilEvent } from '../../events/events.js';
import { DirectoryUnavailable } from '../../users/directory.js';
import { type Console, shownTime } from './console-page.js';
import { browserName } from '../../users/user-agent.js';

/** Events per page. */
const PAGE_SIZE = 50;
/** The longest filter value, characters. */
const MAX_FILTER = 255;

/**
 * What the details column says of an event: the action and its target, the fields a change
 * touched, the error of a failure, the endpoint, and where from (address and browser).
 */
function details(e: SigilEvent): string {
  const parts = [
    e.action,
    e.target ? `${e.target.type} ${e.target.id}` : undefined,
    e.changes && Object.keys(e.changes).length > 0 ? `changed ${Object.keys(e.changes).join(', ')}` : undefined,
    e.error ? `error ${e.error}${e.errorDescription ? `: ${e.errorDescription}` : ''}` : undefined,
    e.endpoint ? `at ${e.endpoint}` : undefined,
    e.remoteAddress ? `from ${e.remoteAddress}` : undefined,
    browserName(e.userAgent),
  ];
  return parts.filter((p) => p !== undefined && p !== '').join(' · ');
}

/**
 * The usernames of a page's subjects, each asked once: config, store, then the directories (a
 * directory that cannot answer leaves its users shown by id, never the page refused).
 */
async function usernames(admin: Console, subjects: Iterable<string>): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const subject of new Set(subjects)) {
    try {
      const user = await admin.ctx.users.findBySubject(subject);
      if (user) names.set(subject, user.username);
    } catch (err) {
      if (!(err instanceof DirectoryUnavailable)) throw err;
    }
  }
  return names;
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
    const names = await usernames(
      admin,
      events.flatMap((e) => (e.subjectId ? [e.subjectId] : [])),
    );
    const rows = events.map((e) => ({
      time: shownTime(Date.parse(e.time) / 1000),
      name: e.name,
      clientId: e.clientId ?? '',
      clientName: (e.clientId && ctx.clients.get(e.clientId)?.clientName) || '',
      subjectId: e.subjectId ?? '',
      username: (e.subjectId && names.get(e.subjectId)) || '',
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
