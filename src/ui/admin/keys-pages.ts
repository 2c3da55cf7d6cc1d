/**
 * The console's signing keys page: every stored key with its status (never a private key),
 * rotation (successors published now, signing after `signingKeys.propagationSeconds`) and
 * retirement, through `ctx.management.keys` as `/admin/v1/keys` does.
 */
import { AdminError } from '../../admin/errors.js';
import { single } from '../../http/fields.js';
import type { Console } from './console-page.js';

/** Registers GET `/admin/keys`, POST `/admin/keys/rotate` and `/admin/keys/retire`. */
export function keyPages(admin: Console): void {
  const { ctx, app } = admin;
  const page = async (
    request: Parameters<Console['render']>[0],
    reply: Parameters<Console['render']>[1],
    error?: string,
    status = 200,
  ) => {
    const keys = (await ctx.management.keys.list()).map((k) => ({
      kid: k.kid,
      alg: k.alg,
      status: k.status,
      activatesAt: new Date(k.activatesAt * 1000).toISOString(),
      retirable: (k.status === 'active' || k.status === 'pending') && k.retiredAt === null,
    }));
    return admin.render(request, reply, 'console-keys', 'keys', { keys, error }, status);
  };

  app.get('/admin/keys', async (request, reply) =>
    (await admin.reader(request, reply)) ? page(request, reply) : reply,
  );

  app.post('/admin/keys/rotate', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    await admin.changes(w.caller).rotateKeys();
    return admin.done(reply, '/admin/keys', 'consoleKeysRotated');
  });

  app.post('/admin/keys/retire', async (request, reply) => {
    const w = await admin.writer(request, reply);
    if (!w) return reply;
    const kid = single(w.form, 'kid') ?? '';
    try {
      if (kid.length === 0 || kid.length > 200) throw new AdminError('not_found', 'no such key');
      await admin.changes(w.caller).retireKey(kid);
    } catch (err) {
      const refusal = admin.refused(request, err);
      if (!refusal) throw err;
      return page(request, reply, refusal.message, refusal.status);
    }
    return admin.done(reply, '/admin/keys', 'consoleKeyRetired');
  });
}
