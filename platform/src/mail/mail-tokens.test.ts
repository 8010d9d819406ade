import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { createDataKey, parseDataKey } from './data-key.ts';
import { readReturnPath, readUnsubscribeToken, readVerpToken, returnPathFor, unsubscribeToken, verpToken } from './mail-tokens.ts';

const key = createDataKey(randomBytes(32));
const otherKey = createDataKey(randomBytes(32));

describe('NOTIFY_DATA_KEY', () => {
  it('refuses fewer than 32 bytes and reads base64 or hex', () => {
    assert.throws(() => parseDataKey(randomBytes(16).toString('base64')), /at least 32 random bytes/);
    const material = randomBytes(32);
    const fromHex = parseDataKey(material.toString('hex'));
    const fromBase64 = parseDataKey(material.toString('base64'));
    assert.equal(fromBase64.open(fromHex.seal('secret', 'dkim:example.com'), 'dkim:example.com'), 'secret');
  });

  it('seals so that only the same key and context open it, and any alteration is detected', () => {
    const sealed = key.seal('-----BEGIN PRIVATE KEY-----', 'dkim:example.com');
    assert.doesNotMatch(sealed, /PRIVATE/);
    assert.equal(key.open(sealed, 'dkim:example.com'), '-----BEGIN PRIVATE KEY-----');
    assert.throws(() => key.open(sealed, 'dkim:example.org'));
    assert.throws(() => otherKey.open(sealed, 'dkim:example.com'));
    const [version, iv, body] = sealed.split('.');
    const flipped = Buffer.from(body!, 'base64url');
    flipped[0]! ^= 1;
    assert.throws(() => key.open(`${version}.${iv}.${flipped.toString('base64url')}`, 'dkim:example.com'));
  });
});

describe('VERP return paths', () => {
  it('are the same for the same key whatever the version: one in a bounce of mail sent before an upgrade still reads', () => {
    const fixedKey = createDataKey(Buffer.alloc(32, 7));
    assert.equal(verpToken(fixedKey, 42), 'aaaaaaaaaaacvfc33gseuqdmksdpq');
    assert.equal(
      unsubscribeToken(fixedKey, { projectId: 3, messageId: 42, address: 'ada@example.com' }),
      'AAAAAAAAAAMAAAAAAAAAKmFkYUBleGFtcGxlLmNvbUyh8j16bV3TxlZ5chaV0aY',
    );
  });

  it('name the message in a short lowercase local part that comes back intact, whatever its case', () => {
    const address = returnPathFor(key, 9_007_199_254_740_991, 'bounces.example.com');
    assert.match(address, /^bounces\+[a-z2-7]{29}@bounces\.example\.com$/);
    assert.ok(address.indexOf('@') <= 64, 'the local part fits RFC 5321 (64 octets)');
    assert.equal(readReturnPath(key, address, 'bounces.example.com'), 9_007_199_254_740_991);
    assert.equal(readReturnPath(key, address.toUpperCase(), 'BOUNCES.example.com'), 9_007_199_254_740_991);
  });

  it('refuse another domain, another key, a changed message id, a truncated token and garbage', () => {
    const token = verpToken(key, 42);
    assert.equal(readVerpToken(key, token), 42);
    assert.equal(readVerpToken(otherKey, token), undefined);
    assert.equal(readReturnPath(key, `bounces+${token}@other.example`, 'bounces.example.com'), undefined);
    assert.equal(readReturnPath(key, `postmaster@bounces.example.com`, 'bounces.example.com'), undefined);
    const forged = verpToken(otherKey, 43);
    assert.equal(readVerpToken(key, forged), undefined);
    assert.equal(readVerpToken(key, token.slice(0, -1)), undefined);
    assert.equal(readVerpToken(key, 'not-base32!'), undefined);
    // Changing the id's bytes without the key cannot keep the signature.
    const swapped = verpToken(key, 43).slice(0, 13) + token.slice(13);
    assert.equal(readVerpToken(key, swapped), undefined);
  });
});

describe('unsubscribe tokens', () => {
  it('carry project, message and address, and verify only under their key', () => {
    const claim = { projectId: 7, messageId: 1234, address: 'Ana.Pérez@Example.com' };
    const token = unsubscribeToken(key, claim);
    assert.match(token, /^[A-Za-z0-9_-]+$/);
    assert.deepEqual(readUnsubscribeToken(key, token), claim);
    assert.equal(readUnsubscribeToken(otherKey, token), undefined);
  });

  it('cannot be turned to another address or project', () => {
    const token = unsubscribeToken(key, { projectId: 7, messageId: 1, address: 'a@example.com' });
    const bytes = Buffer.from(token, 'base64url');
    bytes[7]! ^= 1; // the project id's last byte
    assert.equal(readUnsubscribeToken(key, bytes.toString('base64url')), undefined);
    const other = Buffer.from(token, 'base64url');
    other[16]! ^= 2; // the address's first byte
    assert.equal(readUnsubscribeToken(key, other.toString('base64url')), undefined);
    assert.equal(readUnsubscribeToken(key, 'short'), undefined);
    assert.equal(readUnsubscribeToken(key, `${token}!`), undefined);
  });
});
