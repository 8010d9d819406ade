// What the services that send and receive mail share (`@notify/platform/mail`): NOTIFY_DATA_KEY (webhook-svc's too,
// for the webhook secrets it opens) and the signed tokens a mail carries (VERP return path, unsubscribe link), the syntax
// of SMTP relay lists, and DKIM records in DNS.
export { bounceDomainSetting, createDataKey, type DataKey, dataKeySetting, parseDataKey, webhookSecretSealContext } from './data-key.ts';
export { compareDkimRecords, type DkimRecordStatus, lookUpTxt, parseDnsServers } from './dkim-dns.ts';
export { readReturnPath, readUnsubscribeToken, readVerpToken, returnPathFor, type UnsubscribeClaim, unsubscribeToken, verpToken } from './mail-tokens.ts';
export { parseRelayUrls, projectRelaySealContext, relayAddress } from './relay-urls.ts';
