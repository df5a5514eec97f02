import { describe, expect, it } from 'vitest';
import { escapeHtml, html, type SafeHtml, safeHref } from './html.ts';

describe('html tag', () => {
  it('escapes every interpolated string', () => {
    const evil = `<img src=x onerror="alert('x')">&`;
    expect(html`<p title="${evil}">${evil}</p>`.value).toBe(
      '<p title="&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;">&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;</p>',
    );
  });

  it('nests templates without double escaping, joins arrays, drops false/null/undefined', () => {
    const inner = html`<b>${'a&b'}</b>`;
    expect(html`<div>${inner}${['<', html`<i></i>`]}${false}${null}${undefined}${0}</div>`.value).toBe(
      '<div><b>a&amp;b</b>&lt;<i></i>0</div>',
    );
  });

  it('does not trust a look-alike of SafeHtml', () => {
    const fake = { value: '<script></script>' } as unknown as SafeHtml;
    expect(html`${fake}`.value).toBe('[object Object]');
    expect(escapeHtml('"\'')).toBe('&quot;&#39;');
  });

  it('safeHref keeps http(s) and refuses script URLs', () => {
    expect(safeHref('https://shop.example/a?b=1')).toBe('https://shop.example/a?b=1');
    expect(safeHref('javascript:alert(1)')).toBeUndefined();
    expect(safeHref(' JAVASCRIPT:alert(1)')).toBeUndefined();
    expect(safeHref('data:text/html,x')).toBeUndefined();
    expect(safeHref('not a url')).toBeUndefined();
  });
});
