/**
 * The audit events of user administration: one `admin_changed` event per aspect of a stored user
 * that a change touched, naming the door and the actor (`AdminAudit`), never a secret and, for
 * claims, only their names (their values are personal data, as in `profile_updated` events).
 */
import type { UserWrite } from '../stores/directory.js';
import type { AdminAudit, SignedOut, UserChange } from './user-types.js';

/** Emits the `admin_changed` event of a change to the user `subjectId`, naming the actor of `audit`. */
export function emitUserChange(
  audit: AdminAudit,
  action: string,
  subjectId: string,
  changes: Record<string, unknown>,
): void {
  audit.events.emit({
    name: 'admin_changed',
    endpoint: audit.endpoint,
    ...(audit.clientId !== undefined ? { clientId: audit.clientId } : {}),
    ...(audit.sub !== undefined ? { subjectId: audit.sub } : {}),
    action,
    target: { type: 'user', id: subjectId },
    changes,
  });
}

/**
 * `user.create`: the username, tenant, whether active, the claim names, how many addresses, whether a
 * password was set.
 */
export function auditCreated(audit: AdminAudit, subjectId: string, write: UserWrite): void {
  emitUserChange(audit, 'user.create', subjectId, {
    username: write.username,
    ...(write.tenant ? { tenant: write.tenant } : {}),
    active: write.isActive,
    claims: Object.keys(write.claims),
    ...(write.emails.length > 0 ? { emails: write.emails.length } : {}),
    ...(write.passwordHash !== undefined ? { password: '(set)' } : {}),
  });
}

/**
 * The events of a change written over `before`: `user.activate` or `user.deactivate` (with what
 * deactivation ended), `user.password`, `user.claims` (the claim names, when they changed) and
 * `user.update` (a new username, external id or addresses).
 */
export function auditChanged(
  audit: AdminAudit,
  subjectId: string,
  before: UserWrite,
  write: UserWrite,
  change: UserChange,
  signedOut: SignedOut | undefined,
): void {
  const emit = (action: string, changes: Record<string, unknown>) => emitUserChange(audit, action, subjectId, changes);
  if (write.isActive !== before.isActive)
    emit(write.isActive ? 'user.activate' : 'user.deactivate', {
      active: write.isActive,
      ...(signedOut && !write.isActive
        ? { endedSessions: signedOut.endedSessions, revokedTokens: signedOut.revokedTokens }
        : {}),
    });
  if (audit.recordsChanges) return;
  if (write.passwordHash !== undefined)
    emit('user.password', {
      password: '(set)',
      ...(write.passwordChangeRequired ? { passwordChangeRequired: true } : {}),
    });
  if (change.claims !== undefined && JSON.stringify(write.claims) !== JSON.stringify(before.claims))
    emit('user.claims', { claims: Object.keys(write.claims) });
  const other = {
    ...(write.username !== before.username ? { username: write.username } : {}),
    ...(write.externalId !== before.externalId ? { externalId: '(changed)' } : {}),
    ...(JSON.stringify(write.emails) !== JSON.stringify(before.emails) ? { emails: write.emails.length } : {}),
  };
  if (Object.keys(other).length > 0) emit('user.update', other);
}
