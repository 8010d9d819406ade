// Payloads that cross NATS JetStream (JSON). Like the .proto files, the one place where this boundary is written down.

/** Published by dispatch-svc on NOTIFY_JOBS, Nats-Msg-Id = message id. Carries everything the mailer needs: it has no database. */
export interface DeliveryJob {
  messageId: number;
  celeryTaskId: string;
  projectId: number;
  organizationId: number;
  to: string;
  data: Record<string, unknown>;
  /** Snapshot of the template version accepted with the message. */
  template: { slug: string; version: number; subject: string; html: string; text: string };
  acceptedAt: string;
}

export type DeliveryState = 'sending' | 'deferred' | 'sent' | 'failed';

/** Published by mailer-svc on NOTIFY_EVENTS for every transition, Nats-Msg-Id = `<messageId>:<attempt>:<state>`. */
export interface DeliveryEvent {
  messageId: number;
  state: DeliveryState;
  /** 1 for the first delivery attempt. */
  attempt: number;
  occurredAt: string;
  smtpCode?: number;
  smtpResponse?: string;
  /** Why the message was deferred or failed, in words an integrator can act on. */
  reason?: string;
}

export function deliveryEventId(event: Pick<DeliveryEvent, 'messageId' | 'attempt' | 'state'>): string {
  return `${event.messageId}:${event.attempt}:${event.state}`;
}
