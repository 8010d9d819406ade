import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRenderer, TemplateRenderError, toHeaderText } from './renderer.ts';
import { template } from './testing/template.ts';

describe('template renderer', () => {
  it('escapes data in the HTML part but not in the subject or the text', async () => {
    const renderer = createRenderer();
    const rendered = await renderer.render({ projectId: 1, template: template(), data: { name: '<script>alert("x")</script> & Co' } });
    assert.equal(rendered.html, '<p>Hello &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; Co</p>');
    assert.equal(rendered.subject, 'Hello <script>alert("x")</script> & Co');
    assert.equal(rendered.text, 'Hello <script>alert("x")</script> & Co');
  });

  it('keeps markup the template author wrote in the HTML part', async () => {
    const renderer = createRenderer();
    const rendered = await renderer.render({
      projectId: 1,
      template: template({ html: '<h1>{{ title }}</h1>{{ trusted | raw }}' }),
      data: { title: 'Hi', trusted: '<b>ok</b>' },
    });
    assert.equal(rendered.html, '<h1>Hi</h1><b>ok</b>');
  });

  it('removes line breaks from the subject so data cannot inject headers', async () => {
    const renderer = createRenderer();
    const rendered = await renderer.render({ projectId: 1, template: template(), data: { name: 'Ana\r\nBcc: victim@example.com\nX-Evil: 1' } });
    assert.equal(rendered.subject, 'Hello Ana Bcc: victim@example.com X-Evil: 1');
    assert.doesNotMatch(rendered.subject, /[\r\n]/);
    assert.equal(toHeaderText('  a\r\n\tb\u0000c  '), 'a b c');
  });

  it('renders missing variables as empty and hides inherited properties', async () => {
    const renderer = createRenderer();
    const rendered = await renderer.render({
      projectId: 1,
      template: template({ text: '[{{ missing }}][{{ name.constructor }}][{{ name.size }}]' }),
      data: { name: 'Ana' },
    });
    assert.equal(rendered.text, '[][][3]');
  });

  it('a test render names a variable the data lacks with its line and column; conditions and defaults stay lenient', async () => {
    const renderer = createRenderer();
    const texts = template({ text: 'Hi {{ name }}\n{% if coupon %}{{ coupon }}{% endif %}{{ note | default: "-" }}\nTotal: {{ total }}' });
    await assert.rejects(renderer.render({ projectId: 1, template: texts, data: { name: 'Ana' }, strictVariables: true }), (error: TemplateRenderError) => {
      assert.equal(error.part, 'text');
      assert.match(error.message, /undefined variable: total, line:3, col:11/);
      return true;
    });
    const rendered = await renderer.render({ projectId: 1, template: texts, data: { name: 'Ana', total: 3 }, strictVariables: true });
    assert.equal(rendered.text, 'Hi Ana\n-\nTotal: 3');
    // The same version rendered for a send afterwards is not held to it (a parse of its own, under another key).
    assert.equal((await renderer.render({ projectId: 1, template: texts, data: { name: 'Ana' } })).text, 'Hi Ana\n-\nTotal: ');
  });

  it('cannot read files through include, render or layout', async () => {
    const renderer = createRenderer();
    for (const tag of ["{% include '/etc/passwd' %}", "{% render 'package.json' %}", "{% layout 'package.json' %}x"]) {
      await assert.rejects(renderer.render({ projectId: 1, template: template({ text: tag }), data: {} }), TemplateRenderError);
    }
  });

  it('reports a template that does not parse, naming the part', async () => {
    const renderer = createRenderer();
    await assert.rejects(renderer.render({ projectId: 1, template: template({ html: '{% if %}' }), data: {} }), (error: TemplateRenderError) => {
      assert.equal(error.part, 'html');
      assert.match(error.message, /template "welcome" version 1: the html could not be rendered/);
      return true;
    });
  });

  it('stops a template that would run too long', async () => {
    const renderer = createRenderer({ renderLimit: 200 });
    const started = performance.now();
    const nested = '{% for i in (1..3000) %}{% for j in (1..3000) %}x{% endfor %}{% endfor %}';
    await assert.rejects(renderer.render({ projectId: 1, template: template({ text: nested }), data: {} }), /render limit exceeded/);
    assert.ok(performance.now() - started < 2_000);
  });

  it('stops a template that would build too much', async () => {
    const renderer = createRenderer({ memoryLimit: 100_000 });
    await assert.rejects(
      renderer.render({ projectId: 1, template: template({ text: '{% for i in (1..100000000) %}{{ i }}{% endfor %}' }), data: {} }),
      /memory alloc limit exceeded/,
    );
    const appended = "{{ 'x' | append: big | append: big | append: big }}";
    await assert.rejects(renderer.render({ projectId: 1, template: template({ text: appended }), data: { big: 'y'.repeat(60_000) } }), TemplateRenderError);
  });

  it('refuses a template source above the parse limit', async () => {
    const renderer = createRenderer({ parseLimit: 1_000 });
    await assert.rejects(renderer.render({ projectId: 1, template: template({ html: 'x'.repeat(2_000) }), data: {} }), TemplateRenderError);
  });

  it("never renders one project's template for another that reuses the slug and version", async () => {
    const renderer = createRenderer();
    const first = await renderer.render({ projectId: 1, template: template({ text: 'project one' }), data: {} });
    const second = await renderer.render({ projectId: 2, template: template({ text: 'project two' }), data: {} });
    const changed = await renderer.render({ projectId: 2, template: template({ text: 'edited in place' }), data: {} });
    assert.deepEqual([first.text, second.text, changed.text], ['project one', 'project two', 'edited in place']);
  });
});
