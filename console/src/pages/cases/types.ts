// What the board reads from the operator API (docs/operator.md "GET …/pipelines/{pipelineId}/cases").
export interface Stage {
  id: string;
  name: string;
  kind: 'open' | 'won' | 'lost';
}

export interface Pipeline {
  id: string;
  name: string;
  stages: Stage[];
  default: boolean;
}

export interface BoardCase {
  id: string;
  conversationId: string;
  status: 'open' | 'closed';
  openedAt: string;
  contact: { id: string; name: string; phone: string | null; username: string | null };
  lastMessageAt: string | null;
  reason: string | null;
  scoreBucket: 'hot' | 'warm' | 'cold' | null;
  handledBy: 'none' | 'automation' | 'ai' | 'human' | 'mixed';
  outcome: 'won' | 'lost' | null;
  outcomeAmount: number | null;
  outcomeCurrency: string | null;
  stage: { stage: Stage; amount?: number } | null;
}

export interface Page {
  data: BoardCase[];
  hasMore: boolean;
  nextCursor: string | null;
}

export interface Filters {
  status: 'all' | 'open' | 'closed';
  reason: string;
  score: string;
  handledBy: string;
}

export const who = (c: BoardCase): string =>
  c.contact.name || c.contact.phone || (c.contact.username ? `@${c.contact.username}` : c.contact.id.slice(0, 8));
