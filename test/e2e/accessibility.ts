/**
 * Accessibility checks of a page in Chromium, shared by the browser suites: axe-core's WCAG 2.x A
 * and AA rules (no serious or critical violation), the basics (lang, title, one h1, a main
 * landmark, labels, named buttons, WCAG AA text contrast, no sideways scrolling) and the focused
 * element with its focus ring (keyboard use).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/** axe-core's browser build. */
const AXE_PATH = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** The rule tags run: WCAG 2.0, 2.1 and 2.2 at levels A and AA. */
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

/**
 * The serious and critical axe-core violations of the current page (WCAG 2.x A and AA), one line
 * each: rule, impact, the first offending elements. axe is injected with `addScriptTag` when the
 * page allows it, else (the pages' CSP allows no inline script, rightly) evaluated through the
 * DevTools protocol, which page CSP does not govern; either way the page's own policy is untouched.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() => typeof (window as { axe?: unknown }).axe === 'object');
  if (!loaded) {
    try {
      await page.addScriptTag({ path: AXE_PATH });
    } catch {
      // addScriptTag inserts an inline <script>, which script-src 'self' refuses.
    }
    if (!(await page.evaluate(() => typeof (window as { axe?: unknown }).axe === 'object')))
      await page.evaluate(readFileSync(AXE_PATH, 'utf8'));
  }
  return page.evaluate(async (tags) => {
    const axe = (
      window as unknown as {
        axe: {
          run: (
            ctx: Document,
            opts: object,
          ) => Promise<{ violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `axe ${v.id} (${v.impact}): ${v.nodes
            .slice(0, 3)
            .map((n) => JSON.stringify(n.target))
            .join(', ')}`,
      );
  }, WCAG_TAGS);
}

/**
 * The accessibility problems of the current page: axe-core's serious and critical violations of
 * WCAG 2.x A and AA, and the basics.
 * Contrast: WCAG 2.x ratio of each text element's colour to its effective background, 4.5:1 for
 * body text and 3:1 for large text.
 */
export async function audit(page: Page): Promise<string[]> {
  return [...(await basics(page)), ...(await axeViolations(page))];
}

/** The basics, checked by hand (see `audit`). */
async function basics(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    if (!/^[a-z]{2}/.test(document.documentElement.lang)) problems.push('html has no lang');
    if (document.title.trim() === '') problems.push('no title');
    if (document.querySelectorAll('h1').length !== 1)
      problems.push(`${document.querySelectorAll('h1').length} h1 elements`);
    if (!document.querySelector('main')) problems.push('no main landmark');
    for (const input of document.querySelectorAll<HTMLInputElement>('input:not([type=hidden]), select, textarea')) {
      const byFor = input.id !== '' && document.querySelector(`label[for="${CSS.escape(input.id)}"]`);
      if (!byFor && !input.closest('label') && !input.getAttribute('aria-label'))
        problems.push(`input ${input.name} has no label`);
    }
    for (const b of document.querySelectorAll('button'))
      if ((b.textContent ?? '').trim() === '') problems.push('a button has no text');

    const rgb = (s: string): [number, number, number, number] => {
      const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(s);
      return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : [0, 0, 0, 0];
    };
    const lum = ([r, g, b]: number[]) => {
      const c = [r, g, b].map((v) => {
        const x = (v ?? 0) / 255;
        return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!;
    };
    const background = (el: Element | null): [number, number, number, number] => {
      for (let e = el; e; e = e.parentElement) {
        const bg = rgb(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0.5) return bg;
      }
      return [255, 255, 255, 1];
    };
    for (const el of document.querySelectorAll('h1, p, label, button, li, code, a, .alert')) {
      if ((el.textContent ?? '').trim() === '') continue;
      const style = getComputedStyle(el);
      const fg = lum(rgb(style.color));
      const bg = lum(background(el));
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5))
        problems.push(
          `contrast ${ratio.toFixed(2)} of <${el.tagName.toLowerCase()}> "${(el.textContent ?? '').trim().slice(0, 30)}"`,
        );
    }
    if (document.documentElement.scrollWidth > window.innerWidth + 1)
      problems.push(`scrolls sideways: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
    return problems;
  });
}

/** The focused element as `tag[name=value]`, and whether its focus ring is visible. */
export async function focused(page: Page): Promise<{ id: string; ring: boolean }> {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLInputElement | null;
    if (!el || el === document.body) return { id: 'body', ring: false };
    const style = getComputedStyle(el);
    const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2) || style.boxShadow !== 'none';
    return {
      id: `${el.tagName.toLowerCase()}[${el.name}${el.value && el.tagName === 'BUTTON' ? `=${el.value}` : ''}]`,
      ring,
    };
  });
}
