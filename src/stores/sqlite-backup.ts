/**
 * A consistent copy of a SQLite store while servers keep writing to it, through SQLite's online
 * backup API (better-sqlite3's `db.backup()`, https://www.sqlite.org/backup.html). `sigil backup`
 * calls it; PostgreSQL stores are copied with `pg_dump` instead (docs/deployment.md).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, mkdirSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';

/** The mode of a backup: the owner's alone, whatever the umask (it holds hashes, keys and tokens). */
const BACKUP_MODE = 0o600;

/**
 * Copies the SQLite database at `source` (its committed state, WAL included) to `destination`,
 * which is replaced whole or not at all: the copy is written beside it and renamed into place.
 * Missing folders of `destination` are created. The copy is readable and writable by its owner
 * alone (mode 0600), whatever the umask, since it holds password hashes, signing keys (in clear
 * without a data key) and live tokens.
 *
 * Whatever is at `destination` before, a file of any mode or owner or a symbolic link, is replaced
 * by the rename, never written through: a link's target and another user's file keep their
 * contents, and the new file is this process's with mode 0600. (Replacing rather than refusing
 * keeps a scheduled backup to one name working; a directory where others may rename files is no
 * place for backups, and a sticky one refuses the rename over another user's file.)
 *
 * The copy is taken in one step of the backup API, inside one read transaction: a write by another
 * connection between two steps makes SQLite start the copy over, so a stepwise copy of a store
 * under steady load might never end. In WAL mode the read transaction does not hold up the
 * servers' writes; their checkpoints only stop short of the pages it reads until it ends.
 * @returns the number of database pages copied
 * @throws Error when `source` is no SQLite database or the destination cannot be written
 */
export async function backupSqlite(source: string, destination: string): Promise<number> {
  const db = new SQLite(source, { readonly: true, fileMustExist: true });
  // An unguessable name, created here (O_EXCL: never through a link planted under it) with mode
  // 0600 before SQLite writes to it; SQLite keeps an existing file's mode, and gives its journal
  // the database file's mode.
  const partial = `${destination}.partial-${process.pid}-${randomBytes(6).toString('hex')}`;
  let created = false;
  try {
    db.pragma('busy_timeout = 5000');
    mkdirSync(dirname(destination), { recursive: true });
    const fd = openSync(partial, 'wx', BACKUP_MODE);
    created = true;
    try {
      fchmodSync(fd, BACKUP_MODE); // the umask may have taken bits from the mode given to open
    } finally {
      closeSync(fd);
    }
    const { totalPages } = await db.backup(partial, { progress: () => 0x7fffffff });
    renameSync(partial, destination);
    created = false;
    return totalPages;
  } finally {
    db.close();
    if (created) rmSync(partial, { force: true });
  }
}
