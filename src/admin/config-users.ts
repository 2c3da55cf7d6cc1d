/**
 * The config file's users as the admin services look them up: by username, case-insensitively,
 * within a tenant or in any. Config-file users are read-only and win over stored ones.
 */
import type { UserConfig } from '../config/schema.js';

/** The config-file users named `username` (case-insensitive), of `tenant` when it is not null. */
export function configUsersNamed(users: readonly UserConfig[], username: string, tenant: string | null): UserConfig[] {
  const lower = username.toLowerCase();
  return users.filter((u) => u.username.toLowerCase() === lower && (tenant === null || (u.tenant ?? null) === tenant));
}
