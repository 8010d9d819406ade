// What the services that send and receive mail share (`@notify/platform/mail`): NOTIFY_DATA_KEY and the signed tokens
// a mail carries (VERP return path, unsubscribe link).
export { bounceDomainSetting, createDataKey, dataKeySetting, parseDataKey, type DataKey } from './data-key.ts';
export { readReturnPath, readUnsubscribeToken, readVerpToken, returnPathFor, unsubscribeToken, verpToken, type UnsubscribeClaim } from './mail-tokens.ts';
