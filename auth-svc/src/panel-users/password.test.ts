import assert from 'node:assert/strict';
import { test } from 'node:test';
import { currentParameters, hashPassword, needsRehash, passwordMatches, passwordProblem } from './password.ts';

test('a password matches its own hash and no other password', async () => {
  const stored = await hashPassword('correct horse battery staple');
  assert.equal(await passwordMatches('correct horse battery staple', stored), true);
  assert.equal(await passwordMatches('correct horse battery stapl', stored), false);
  assert.equal(await passwordMatches('', stored), false);
});

test('every hash has its own random salt and records the parameters it was made with', async () => {
  const [first, second] = await Promise.all([hashPassword('the same password'), hashPassword('the same password')]);
  assert.notDeepEqual(first.salt, second.salt);
  assert.notDeepEqual(first.hash, second.hash);
  assert.equal(first.salt.length, 16);
  assert.equal(first.hash.length, 32);
  assert.deepEqual({ n: first.n, r: first.r, p: first.p }, currentParameters);
});

test('a hash verifies with the parameters stored beside it, and weaker ones ask to be upgraded', async () => {
  const weak = await hashPassword('an older password hash', { n: 2 ** 14, r: 8, p: 1 });
  assert.equal(await passwordMatches('an older password hash', weak), true);
  assert.equal(needsRehash(weak), true);
  assert.equal(needsRehash(currentParameters), false);
});

test('the same password typed in another Unicode form still matches', async () => {
  const stored = await hashPassword('contrase\u00f1a segura');
  assert.equal(await passwordMatches('contrasen\u0303a segura', stored), true);
});

test('a new password must be 12 to 1024 characters long', () => {
  assert.equal(passwordProblem('short'), 'must be at least 12 characters');
  assert.equal(passwordProblem('🔑'.repeat(11)), 'must be at least 12 characters');
  assert.equal(passwordProblem('x'.repeat(1025)), 'must be at most 1024 characters');
  assert.equal(passwordProblem('twelve chars'), undefined);
});
