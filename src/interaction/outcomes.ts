/**
 * What happens to a pending authorization request when a page is done with it: the one door
 * between the pages (login, second factor, consent, device, federation) and the protocol.
 */
import type { Interaction } from '../stores/records/interactions.js';

/** Where a pending request continues after the login or consent page. */
export function resumePath(id: string, interaction: Interaction): string {
  const base = interaction.device ? '/device/resume' : '/connect/authorize/resume';
  return `${base}?interaction=${encodeURIComponent(id)}`;
}
