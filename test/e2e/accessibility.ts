/**
 * Accessibility checks of a page in Chromium, shared by the browser suites: the basics (lang,
 * title, one h1, a main landmark, labels, named buttons, WCAG AA text contrast, no sideways
 * scrolling) and the focused element with its focus ring (keyboard use).
 */
import type { Page } from 'playwright-core';

/**
 * The accessibility basics of the current page; returns the problems found.
 * Contrast: WCAG 2.x ratio of each text element's colour to its effective background, 4.5:1 for
 * body text and 3:1 for large text.
 */
export async function audit(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    if (!/^[a-z]{2}/.test(document.documentElement.lang)) problems.push('html has no lang');
    if (document.title.trim() === '') problems.push('no title');
    if (document.querySelectorAll('h1').length !== 1) problems.push(`${document.querySelectorAll('h1').length} h1 elements`);
    if (!document.querySelector('main')) problems.push('no main landmark');
    for (const input of document.querySelectorAll<HTMLInputElement>('input:not([type=hidden]), select, textarea')) {
      const byFor = input.id !== '' && document.querySelector(`label[for="${CSS.escape(input.id)}"]`);
      if (!byFor && !input.closest('label') && !input.getAttribute('aria-label')) problems.push(`input ${input.name} has no label`);
    }
    for (const b of document.querySelectorAll('button')) if ((b.textContent ?? '').trim() === '') problems.push('a button has no text');

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
      if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)} of <${el.tagName.toLowerCase()}> "${(el.textContent ?? '').trim().slice(0, 30)}"`);
    }
    if (document.documentElement.scrollWidth > window.innerWidth + 1) problems.push(`scrolls sideways: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
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
    return { id: `${el.tagName.toLowerCase()}[${el.name}${el.value && el.tagName === 'BUTTON' ? `=${el.value}` : ''}]`, ring };
  });
}
