// A send's 202 body (docs/contract.md), beside the SendResponse that carries it between the services: the gateway
// answers with it and keeps it for the replays it answers from memory; dispatch-svc stores it in the send's
// idempotency record (and each accepted item's in a batch's), so that a replay answers exactly as the first request.

/** The seed's four fields, spelled as the public API spells them; a scheduled send's adds its `send_at` (status `scheduled`). */
export interface AcceptedBody {
  message_id: number;
  status: string;
  celery_task_id: string;
  idempotent_replay: boolean;
  /** RFC 3339, UTC. */
  send_at?: string;
}
