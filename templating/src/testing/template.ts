// The template the renderer's and the pool's tests render: version 1 of `welcome`, greeting `name` in every part,
// with any part replaced.
export const template = (parts: Partial<{ subject: string; html: string; text: string }> = {}) => ({
  slug: 'welcome',
  version: 1,
  subject: 'Hello {{ name }}',
  html: '<p>Hello {{ name }}</p>',
  text: 'Hello {{ name }}',
  ...parts,
});
