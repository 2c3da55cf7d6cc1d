/**
 * Page texts in the supported languages, and the choice of language: the first supported tag of
 * `ui_locales` (OIDC Core §3.1.2.1), else of `Accept-Language`, else English.
 */
import { PASSKEY_TEXTS_DE, PASSKEY_TEXTS_EN } from './passkeys-pages.js';

// Passkey and security key texts (issue 12): src/ui/passkeys-pages.ts.
const en = {
  ...PASSKEY_TEXTS_EN,
  signInTitle: 'Sign in',
  signInTo: 'Sign in to continue to {client}',
  tenant: 'Organisation: {tenant}',
  username: 'Username',
  password: 'Password',
  signIn: 'Sign in',
  cancel: 'Cancel',
  invalidCredentials: 'The username or password is incorrect.',
  tooManyAttempts: 'Too many failed attempts. Please wait a moment and try again.',
  consentTitle: 'Allow access?',
  consentIntro: '{client} would like to:',
  offlineAccess: 'Keep access when you are not using it (offline access)',
  remember: 'Remember my decision',
  allow: 'Allow',
  deny: 'Deny',
  errorTitle: 'Something went wrong',
  errorIntro: 'The request could not be completed.',
  errorCode: 'Error',
  logoutTitle: 'Sign out',
  logoutQuestion: 'Do you want to sign out?',
  logout: 'Sign out',
  signedOutTitle: 'Signed out',
  signedOut: 'You are now signed out.',
  signedInTitle: 'Signed in',
  signedInAs: 'You are signed in as {user}.',
  expired: 'This sign-in request has expired or is not valid in this browser. Please start again from the application.',
  continue: 'Continue',
  scopeOpenid: 'Know who you are',
  scopeProfile: 'See your name',
  scopeEmail: 'See your email address',
  scopeOther: 'Use {scope}',
  orSignInWith: 'Or sign in with',
  deviceTitle: 'Connect a device',
  deviceIntro: 'Enter the code shown on your device.',
  userCode: 'Code',
  invalidCode: 'This code is not valid or has expired.',
  deviceWarning: 'A device is asking for access to your account. Only continue if you started this on a device you own and it shows the code you entered.',
  deviceApproved: 'Done. You can return to your device.',
  deviceDenied: 'The device was not given access.',
} as const;

/** A catalogue: every key of the English one. */
export type Messages = { [K in keyof typeof en]: string };

const de: Messages = {
  ...PASSKEY_TEXTS_DE,
  signInTitle: 'Anmelden',
  signInTo: 'Melden Sie sich an, um mit {client} fortzufahren',
  tenant: 'Organisation: {tenant}',
  username: 'Benutzername',
  password: 'Passwort',
  signIn: 'Anmelden',
  cancel: 'Abbrechen',
  invalidCredentials: 'Benutzername oder Passwort ist falsch.',
  tooManyAttempts: 'Zu viele Fehlversuche. Bitte warten Sie einen Moment und versuchen Sie es erneut.',
  consentTitle: 'Zugriff erlauben?',
  consentIntro: '{client} möchte:',
  offlineAccess: 'Zugriff behalten, auch wenn Sie die Anwendung nicht nutzen (Offline-Zugriff)',
  remember: 'Entscheidung merken',
  allow: 'Erlauben',
  deny: 'Ablehnen',
  errorTitle: 'Etwas ist schiefgelaufen',
  errorIntro: 'Die Anfrage konnte nicht abgeschlossen werden.',
  errorCode: 'Fehler',
  logoutTitle: 'Abmelden',
  logoutQuestion: 'Möchten Sie sich abmelden?',
  logout: 'Abmelden',
  signedOutTitle: 'Abgemeldet',
  signedOut: 'Sie sind jetzt abgemeldet.',
  signedInTitle: 'Angemeldet',
  signedInAs: 'Sie sind als {user} angemeldet.',
  expired: 'Diese Anmeldeanfrage ist abgelaufen oder in diesem Browser nicht gültig. Bitte beginnen Sie erneut in der Anwendung.',
  continue: 'Weiter',
  scopeOpenid: 'Wissen, wer Sie sind',
  scopeProfile: 'Ihren Namen sehen',
  scopeEmail: 'Ihre E-Mail-Adresse sehen',
  scopeOther: '{scope} verwenden',
  orSignInWith: 'Oder anmelden mit',
  deviceTitle: 'Gerät verbinden',
  deviceIntro: 'Geben Sie den Code ein, den Ihr Gerät anzeigt.',
  userCode: 'Code',
  invalidCode: 'Dieser Code ist ungültig oder abgelaufen.',
  deviceWarning: 'Ein Gerät bittet um Zugriff auf Ihr Konto. Fahren Sie nur fort, wenn Sie dies auf einem eigenen Gerät gestartet haben und es den eingegebenen Code anzeigt.',
  deviceApproved: 'Fertig. Sie können zu Ihrem Gerät zurückkehren.',
  deviceDenied: 'Das Gerät hat keinen Zugriff erhalten.',
};

/** Supported languages and their texts. */
export const CATALOGUES: Record<string, Messages> = { en, de };
/** A supported language tag. */
export type Locale = keyof typeof CATALOGUES;

/**
 * Picks the page language.
 * @param uiLocales the `ui_locales` parameter (space-separated BCP 47 tags), if any
 * @param acceptLanguage the `Accept-Language` header, if any
 */
export function pickLocale(uiLocales: string | undefined, acceptLanguage: string | undefined): string {
  const candidates = [
    ...(uiLocales ?? '').split(' '),
    ...(acceptLanguage ?? '').split(',').map((part) => part.split(';')[0] ?? ''),
  ];
  for (const tag of candidates) {
    const primary = tag.trim().toLowerCase().split('-')[0] ?? '';
    if (Object.hasOwn(CATALOGUES, primary)) return primary;
  }
  return 'en';
}

/** Fills `{name}` placeholders of a text. Values are escaped later by the template. */
export function format(text: string, values: Record<string, string>): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
