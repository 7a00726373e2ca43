// The event kinds a webhook can receive: a copy of EVENT_KINDS in src/webhooks/outbox.ts (the
// server lists them in no route; test/e2e/console-config.test.ts checks the page's checkboxes
// equal the server's list, so a new kind there fails that test until it is added here).
export const EVENT_KINDS = [
  'message.received',
  'message.status',
  'contact.created',
  'contact.opted_out',
  'campaign.completed',
  'automation.completed',
  'automation.failed',
  'agent.goal_reached',
  'agent.handed_off',
  'agent.conversation_reviewed',
  'case.opened',
  'case.classified',
  'case.closed',
  'case.outcome',
  'case.stage_changed',
] as const;
