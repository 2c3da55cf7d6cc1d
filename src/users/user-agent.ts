/**
 * A short description of a browser from its `User-Agent` ("Chrome on Linux"), for the list of a
 * user's sessions on /account/sessions. Shown to the user only, never used for a decision, so a
 * first match in two small ordered tables is enough; the full parsers (ua-parser-js, bowser) carry
 * hundreds of device rules this one line does not need, and ua-parser-js 2 is AGPL.
 *
 * The order matters: Chromium-based browsers also say "Chrome" and "Safari", Chrome says "Safari",
 * Android says "Linux", iOS says "like Mac OS X".
 */

const BROWSERS: readonly (readonly [RegExp, string])[] = [
  [/\bEdg(?:e|A|iOS)?\//, 'Edge'],
  [/\bOPR\/|\bOpera\b/, 'Opera'],
  [/\bSamsungBrowser\//, 'Samsung Internet'],
  [/\bVivaldi\//, 'Vivaldi'],
  [/\bYaBrowser\//, 'Yandex Browser'],
  [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
  [/\bHeadlessChrome\//, 'Headless Chrome'],
  [/\bChrom(?:e|ium)\/|\bCriOS\//, 'Chrome'],
  [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
  [/\bcurl\//, 'curl'],
];

const SYSTEMS: readonly (readonly [RegExp, string])[] = [
  [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bAndroid\b/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b|\bX11\b/, 'Linux'],
];

/**
 * "Browser on system", the browser or the system alone when only one is known, or undefined when
 * neither is (the page then says "Unknown device").
 * @param userAgent the `User-Agent` kept with the session (at most 200 characters)
 */
export function describeUserAgent(userAgent: string | undefined): { browser?: string; system?: string } | undefined {
  if (!userAgent) return undefined;
  const browser = BROWSERS.find(([pattern]) => pattern.test(userAgent))?.[1];
  const system = SYSTEMS.find(([pattern]) => pattern.test(userAgent))?.[1];
  if (browser === undefined && system === undefined) return undefined;
  return { ...(browser !== undefined ? { browser } : {}), ...(system !== undefined ? { system } : {}) };
}

/** "Firefox on Linux", or the one of them known; undefined when neither is (console lists). */
export function browserName(userAgent: string | undefined): string | undefined {
  const ua = describeUserAgent(userAgent);
  return ua && [ua.browser, ua.system].filter((p) => p !== undefined).join(' on ');
}
