// An AI agent as the operator routes answer it (docs/operator.md "AI agents"), and a number's agent.
export interface Agent {
  id: string;
  name: string;
  status: 'active' | 'paused';
  version: string;
  instructions: string;
  goal: { description: string; fields: { name: string; description: string; required: boolean }[] } | null;
  handoff: { rules: string[]; phrases: string[] };
  review: { criteria: { name: string }[]; extract: { name: string }[] } | null;
  model: string | null;
  maxTurns: number;
}

export interface PhoneNumber {
  id: string;
  phone: string;
  name: string | null;
  agentId: string | null;
}

export const numberLabel = (p: PhoneNumber): string => `+${p.phone}${p.name ? ` (${p.name})` : ''}`;
