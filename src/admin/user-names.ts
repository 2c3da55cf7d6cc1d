/**
 * The names a stored user may take, the one rule of every door that adds or renames one: no other
 * stored user of the tenant, no user directory and (but for `sigil users add`) no config-file user
 * may hold the username, case-insensitively; no client's id may be the subject (RFC 9068 §5).
 */
import type { ResolvedConfig } from '../config/loader.js';
import { clientSubjectCollision, MAX_USERNAME_LENGTH } from '../config/schema.js';
import type { Store } from '../stores/types.js';
import { configUsersNamed } from './config-users.js';
import { AdminError } from './errors.js';
import { usernameTaken } from './user-rules.js';
import type { NameHolder, UsernameHolder } from './user-types.js';

/** Who holds a username or subject besides the user at hand. */
export class UserNames {
  /** @param directories the user directories, whose usernames no stored user may take */
  constructor(
    private readonly store: Pick<Store, 'users' | 'clients' | 'directory'>,
    private readonly config: ResolvedConfig,
    private readonly directories: readonly NameHolder[],
  ) {}

  /**
   * Who besides the stored users holds `username` (case-insensitively, in any tenant): a config-file
   * user, else a user directory. A directory's name is refused by every door (a stored user of that
   * name would answer for the directory user at sign-in); a config user's by every door but the
   * command line's `users add`, which saves the user and warns that the config user wins.
   * @throws DirectoryUnavailable when a directory cannot answer: the name may be its user's, so the
   *   caller refuses with a temporary error (503) rather than take it unchecked.
   */
  async holderOf(username: string): Promise<UsernameHolder | undefined> {
    const config = configUsersNamed(this.config.users, username, null)[0];
    if (config) return { kind: 'config', username: config.username, subjectId: config.subjectId };
    for (const directory of this.directories)
      if (await directory.findByUsername(username)) return { kind: 'directory', directory: directory.name };
    return undefined;
  }

  /**
   * The subject of the user an admin names by `username` (case-insensitively, in any tenant): the
   * config-file user of that name (who wins, as everywhere), else the one stored user of it, else
   * a user directory's. Undefined when no one holds it, when it cannot be a username (too long, a
   * control character: never looked up, as PostgreSQL refuses a NUL), or when config-file users of
   * several tenants share it, so that a name never silently picks one of two people.
   * @throws DirectoryUnavailable when a directory cannot answer.
   */
  async subjectOf(username: string): Promise<string | undefined> {
    if (username.length === 0 || username.length > MAX_USERNAME_LENGTH || /[\u0000-\u001f\u007f]/.test(username))
      return undefined;
    const config = configUsersNamed(this.config.users, username, null);
    if (config.length > 0) return config.length === 1 ? config[0]?.subjectId : undefined;
    const stored = await this.store.users.findUserByUsername(username, null);
    if (stored) return stored.subjectId;
    for (const directory of this.directories) {
      const user = await directory.findByUsername(username);
      if (user) return user.subjectId;
    }
    return undefined;
  }

  /**
   * Refuses a username held by another stored user of the tenant (null: of any tenant), a user
   * directory, or (`strict`) a config-file user (`holderOf`).
   * @param except the stored user being renamed, whose own name is no conflict
   * @throws AdminError `conflict` (field `username`): with detail `exists` when a stored user holds
   *   it, without when a directory or config-file user does; DirectoryUnavailable.
   */
  async checkNameFree(
    username: string,
    tenant: string | null,
    except: string | undefined,
    strict: boolean,
  ): Promise<void> {
    const stored =
      tenant === null
        ? await this.store.directory.usernameTaken(username, except)
        : ((await this.store.users.findUserByUsername(username, tenant))?.subjectId ?? except) !== except;
    if (stored) throw usernameTaken(username);
    const holder = await this.holderOf(username);
    if (holder?.kind === 'directory')
      throw new AdminError(
        'conflict',
        `userName "${username}" is taken: it belongs to a user of directory "${holder.directory}"`,
        'username',
      );
    if (holder?.kind === 'config' && strict)
      throw new AdminError(
        'conflict',
        `userName "${username}" is taken: the config file defines a user of that name`,
        'username',
      );
  }

  /**
   * Refuses a subject that is a config-file or stored client's id (RFC 9068 §5) or a stored user's.
   * @throws AdminError `invalid` (field `subjectId`) for a client's id, `conflict` for a stored user's.
   */
  async checkSubjectFree(subjectId: string, username: string): Promise<void> {
    const client =
      this.config.clients.find((c) => c.clientId === subjectId)?.clientId ??
      (await this.store.clients.listClients()).find((c) => c.clientId === subjectId)?.clientId;
    if (client !== undefined)
      throw new AdminError('invalid', clientSubjectCollision(String(client), `user "${username}"`), 'subjectId');
    if (await this.store.users.findUserBySubject(subjectId))
      throw new AdminError('conflict', `a stored user has the subject "${subjectId}"`, 'subjectId');
  }
}
