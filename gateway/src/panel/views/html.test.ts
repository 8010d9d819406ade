import assert from 'node:assert/strict';
import { test } from 'node:test';
import { html } from './html.ts';

test('interpolated text is escaped in element content and in attributes', () => {
  const hostile = `<script>alert("x")</script>' onmouseover='y' & more`;
  assert.equal(
    html`<p title="${hostile}">${hostile}</p>`.toString(),
    '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;y&#39; &amp; more">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;y&#39; &amp; more</p>',
  );
});

test('fragments and lists of fragments are inserted as built, and nothing renders as nothing', () => {
  const items = ['a<b', 'c'].map((item) => html`<li>${item}</li>`);
  assert.equal(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.toString(), '<ul><li>a&lt;b</li><li>c</li></ul>0');
});
