/**
 * A tiny HTML template tag that escapes by default. Every interpolated value is escaped unless it
 * is already SafeHtml (the result of another `html` template), so merchant-controlled text such as
 * merchant_name or description can never open a tag or leave an attribute.
 *
 * Rule for templates: always quote attribute values (`href="${url}"`). Escaping covers & < > " ',
 * which is enough inside quoted attributes and text, not inside unquoted attributes, <script> or
 * <style> (the pages have no inline script or style: the CSP forbids them anyway). URLs placed in
 * href go through `safeHref` first, because escaping does not stop a `javascript:` URL.
 */

export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type HtmlValue = SafeHtml | string | number | bigint | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.value;
  // false/null/undefined render as nothing so that `${cond && html`…`}` reads naturally.
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Only http(s) URLs may become links; anything else (javascript:, data:) becomes undefined. */
export function safeHref(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}
