/**
 * Page texts in the supported languages, and the choice of language: the first supported tag of
 * `ui_locales` (OIDC Core §3.1.2.1), else the most preferred supported language of
 * `Accept-Language` by its q-values (RFC 9110 §12.5.4), else English.
 */
import Negotiator from 'negotiator';
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
  mfaTitle: 'Two-step verification',
  mfaIntro: 'Enter the 6-digit code from your authenticator app, or one of your recovery codes.',
  oneTimeCode: 'Verification code',
  verify: 'Verify',
  invalidOneTimeCode: 'This code is not valid. Each code can be used only once.',
  totpTitle: 'Set up an authenticator app',
  totpIntro: 'Scan the QR code with your authenticator app, or type the key into it. Then enter the 6-digit code the app shows.',
  totpRequired: 'This application asks for a second factor. Set one up to continue.',
  totpQrAlt: 'QR code to add Sigil to your authenticator app',
  totpSecret: 'Key to type in',
  activate: 'Activate',
  recoveryTitle: 'Your recovery codes',
  recoveryIntro: 'Keep these codes in a safe place. Each one works once, instead of your authenticator app. They are shown only now.',
  accountTitle: 'Your account',
  accountFactors: 'Second factors',
  accountNoFactors: 'You have no second factor yet.',
  factorTotp: 'Authenticator app',
  factorRecoveryCodes: 'Recovery codes',
  factorAdded: 'added {date}',
  remove: 'Remove',
  removeFactor: 'Remove {name} ({date})',
  addTotp: 'Add an authenticator app',
  recoveryRemaining: '{count} of 10 recovery codes left.',
  regenerateRecovery: 'Create new recovery codes',
  freshSignInNeeded: 'For your security, sign in again before you change your second factors.',
  signInAgain: 'Sign in again',
  factorRemoved: 'The second factor was removed.',
  unknownFactor: 'This second factor does not exist (any more).',
  signOut: 'Sign out',
  // Password policy (issue 24, users/password-policy.ts).
  passwordTooShort: 'The password must have at least 8 characters.',
  passwordTooLong: 'The password must have at most 256 characters.',
  passwordCommon: 'This password is common or has appeared in data breaches. Please choose another.',
  passwordGuessable: 'This password is too easy to guess. A few unrelated words make a strong one.',
  passwordContainsUsername: 'The password must not contain your username.',
  passwordContainsProductName: 'The password must not contain the name of this service.',
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
  mfaTitle: 'Bestätigung in zwei Schritten',
  mfaIntro: 'Geben Sie den 6-stelligen Code aus Ihrer Authenticator-App oder einen Ihrer Wiederherstellungscodes ein.',
  oneTimeCode: 'Bestätigungscode',
  verify: 'Bestätigen',
  invalidOneTimeCode: 'Dieser Code ist ungültig. Jeder Code gilt nur einmal.',
  totpTitle: 'Authenticator-App einrichten',
  totpIntro: 'Scannen Sie den QR-Code mit Ihrer Authenticator-App oder tippen Sie den Schlüssel ein. Geben Sie dann den 6-stelligen Code aus der App ein.',
  totpRequired: 'Diese Anwendung verlangt einen zweiten Faktor. Richten Sie einen ein, um fortzufahren.',
  totpQrAlt: 'QR-Code, um Sigil zu Ihrer Authenticator-App hinzuzufügen',
  totpSecret: 'Schlüssel zum Eintippen',
  activate: 'Aktivieren',
  recoveryTitle: 'Ihre Wiederherstellungscodes',
  recoveryIntro: 'Bewahren Sie diese Codes sicher auf. Jeder gilt einmal, anstelle Ihrer Authenticator-App. Sie werden nur jetzt angezeigt.',
  accountTitle: 'Ihr Konto',
  accountFactors: 'Zweite Faktoren',
  accountNoFactors: 'Sie haben noch keinen zweiten Faktor.',
  factorTotp: 'Authenticator-App',
  factorRecoveryCodes: 'Wiederherstellungscodes',
  factorAdded: 'hinzugefügt am {date}',
  remove: 'Entfernen',
  removeFactor: '{name} ({date}) entfernen',
  addTotp: 'Authenticator-App hinzufügen',
  recoveryRemaining: 'Noch {count} von 10 Wiederherstellungscodes.',
  regenerateRecovery: 'Neue Wiederherstellungscodes erstellen',
  freshSignInNeeded: 'Melden Sie sich zu Ihrer Sicherheit erneut an, bevor Sie Ihre zweiten Faktoren ändern.',
  signInAgain: 'Erneut anmelden',
  factorRemoved: 'Der zweite Faktor wurde entfernt.',
  unknownFactor: 'Diesen zweiten Faktor gibt es nicht (mehr).',
  signOut: 'Abmelden',
  passwordTooShort: 'Das Passwort muss mindestens 8 Zeichen haben.',
  passwordTooLong: 'Das Passwort darf höchstens 256 Zeichen haben.',
  passwordCommon: 'Dieses Passwort ist verbreitet oder ist bei Datenlecks bekannt geworden. Bitte wählen Sie ein anderes.',
  passwordGuessable: 'Dieses Passwort ist zu leicht zu erraten. Einige Wörter ohne Zusammenhang ergeben ein starkes.',
  passwordContainsUsername: 'Das Passwort darf Ihren Benutzernamen nicht enthalten.',
  passwordContainsProductName: 'Das Passwort darf den Namen dieses Dienstes nicht enthalten.',
};

/** Supported languages and their texts. */
export const CATALOGUES: Record<string, Messages> = { en, de };
/** A supported language tag. */
export type Locale = keyof typeof CATALOGUES;

/** The supported languages, English first: it wins a tie and is the default. */
const SUPPORTED = Object.keys(CATALOGUES);
/** The syntax of a BCP 47 language tag (RFC 5646 §2.1, loosely): no wildcard, no parameters. */
const LANGUAGE_TAG = /^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*$/;

/** The supported language an `Accept-Language` value prefers (negotiator: q-values, then specificity, then order). */
function negotiate(acceptLanguage: string): string | undefined {
  return new Negotiator({ headers: { 'accept-language': acceptLanguage } }).language(SUPPORTED);
}

/**
 * Picks the page language: the first tag of `uiLocales` that names a supported language (a
 * region or script subtag falls back to its language: `de-CH` is `de`), else the supported
 * language `acceptLanguage` prefers (a language with `q=0` never), else English.
 * @param uiLocales the `ui_locales` parameter (space-separated BCP 47 tags in order of preference), if any
 * @param acceptLanguage the `Accept-Language` header, if any
 * @returns a key of `CATALOGUES`
 */
export function pickLocale(uiLocales: string | undefined, acceptLanguage: string | undefined): string {
  for (const tag of (uiLocales ?? '').split(' ')) {
    const lang = LANGUAGE_TAG.test(tag) ? negotiate(tag) : undefined;
    if (lang) return lang;
  }
  return negotiate(acceptLanguage ?? '') ?? 'en';
}

/** Fills `{name}` placeholders of a text. Values are escaped later by the template. */
export function format(text: string, values: Record<string, string>): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
