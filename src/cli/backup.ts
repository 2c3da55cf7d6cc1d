/**
 * `sigil backup FILE`: writes a consistent copy of the configured SQLite store to FILE
 * while servers keep running on it (see `backupSqlite`). To restore, stop Sigil and put the copy in
 * the store's place (docs/deployment.md). PostgreSQL stores are refused with a pointer to
 * `pg_dump`, and `memory` has nothing to copy. The copy has mode 0600 whatever the umask; without
 * `SIGIL_DATA_KEY` a warning on stderr says its signing keys are in clear. Exit codes: 0 written,
 * 1 the copy failed, 2 invalid usage or a store this command does not copy.
 */
import { resolve } from 'node:path';
import { parseDataKey } from '../keys/keys.js';
import { backupSqlite } from '../stores/sqlite-backup.js';
import { parseStorageUrl } from '../stores/sql.js';

/**
 * Runs `sigil backup FILE`.
 * @param storage the resolved storage URL (`sqlite:<file>`, `postgres://...` or `memory`)
 * @param args the positionals after `backup`: exactly one, the destination FILE
 * @returns the exit code
 */
export async function backupCommand(storage: string, args: string[]): Promise<number> {
  const [file, ...extra] = args;
  if (file === undefined || extra.length > 0) return usage('usage: sigil backup FILE [--config FILE] [--storage URL]');
  const target = parseStorageUrl(storage);
  if (target.kind === 'postgres')
    return usage(
      'sigil backup copies SQLite stores; back up PostgreSQL with pg_dump (see docs/deployment.md, "Backups")',
    );
  if (target.path === ':memory:')
    return usage('sigil backup: the "memory" store lives in one process and has nothing to copy');
  const destination = resolve(file);
  if (destination === resolve(target.path)) return usage('sigil backup: FILE is the store itself');
  // Read as the server reads it (a malformed key fails here as it fails `sigil start`).
  const dataKey = parseDataKey(process.env.SIGIL_DATA_KEY);
  const pages = await backupSqlite(target.path, destination);
  console.log(`sigil: backup of ${storage} written to ${destination} (${pages} pages)`);
  // Without a data key the server stores the private signing keys and TOTP secrets unencrypted,
  // and the copy holds them so: said on stderr, where a scheduled job's mail or log shows it.
  if (!dataKey)
    console.error(
      `sigil: warning: SIGIL_DATA_KEY is not set, so the signing keys in ${destination} are not encrypted: keep the file as secret as the keys`,
    );
  return 0;
}

function usage(message: string): number {
  console.error(message.startsWith('usage:') ? message : `sigil: ${message}`);
  return 2;
}
