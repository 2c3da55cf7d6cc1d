/**
 * A consistent copy of a SQLite store while servers keep writing to it, through SQLite's online
 * backup API (better-sqlite3's `db.backup()`, https://www.sqlite.org/backup.html). `sigil backup`
 * calls it; PostgreSQL stores are copied with `pg_dump` instead (docs/deployment.md).
 */
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';

/**
 * Copies the SQLite database at `source` (its committed state, WAL included) to `destination`,
 * which is replaced whole or not at all: the copy is written beside it and renamed into place.
 * Missing folders of `destination` are created.
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
  const partial = `${destination}.partial-${process.pid}`;
  try {
    db.pragma('busy_timeout = 5000');
    mkdirSync(dirname(destination), { recursive: true });
    const { totalPages } = await db.backup(partial, { progress: () => 0x7fffffff });
    renameSync(partial, destination);
    return totalPages;
  } finally {
    db.close();
    rmSync(partial, { force: true });
  }
}
