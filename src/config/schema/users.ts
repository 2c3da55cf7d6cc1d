/** Users of the config file. */
import * as z from 'zod';
import { nonEmpty } from './field-kinds.js';

const jsonValue: z.ZodType<unknown> = z.unknown();

/**
 * The longest username, characters: of the config file's users, the stored ones (`UserAdmin`),
 * and the bound every sign-in door (login page, password grant, user directories) applies before
 * it looks a name up.
 */
export const MAX_USERNAME_LENGTH = 100;
/** The longest subject (`sub`), characters (OIDC Core §2: at most 255 ASCII characters). */
export const MAX_SUBJECT_LENGTH = 255;

/** One entry of `users`: a user of the config file, its password given in clear text or hashed. */
export const user = z
  .strictObject({
    subjectId: nonEmpty.max(MAX_SUBJECT_LENGTH).meta({
      description: "The user's stable identifier (sub); never a client id",
      spec: 'OIDC Core §2; RFC 9068 §5',
    }),
    username: nonEmpty
      .max(MAX_USERNAME_LENGTH)
      .meta({ description: 'The sign-in name, unique per tenant (case-insensitive)' }),
    password: z
      .string()
      .optional()
      .meta({ description: 'A clear-text password, hashed with argon2id at start and not kept' }),
    passwordHash: z
      .string()
      .startsWith('$argon2')
      .optional()
      .meta({ description: 'An argon2id hash ($argon2id$...) instead of password' }),
    tenant: nonEmpty.optional().meta({ description: 'The tenant the user belongs to (acr_values=tenant:<name>)' }),
    isActive: z.boolean().default(true).meta({ description: 'An inactive user cannot sign in' }),
    claims: z
      .record(z.string(), jsonValue)
      .default({})
      .meta({ description: 'User claims by name; a claim given as an array stays an array', spec: 'OIDC Core §5.1' }),
  })
  .refine((u) => !(u.password !== undefined && u.passwordHash !== undefined), {
    message: 'give either password or passwordHash, not both',
  });
