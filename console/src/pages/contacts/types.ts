// What the contact routes answer (src/contacts/admin-routes.ts).
export interface Contact {
  id: string;
  phone: string | null;
  name: string;
  attributes: Record<string, string>;
  optedOut: boolean;
  marketingOptOut: boolean;
  socialchat: { id: string; username: string | null } | null;
}

export interface ContactWithConversations extends Contact {
  conversations: { id: string; channel: string; lastInboundAt: string | null; createdAt: string }[];
}

export interface RowFailure {
  row: number;
  problems: { column: string; value: string; reason: string }[];
}

export interface ContactImport {
  id: string;
  state: 'previewed' | 'queued' | 'running' | 'done' | 'failed';
  columns: string[];
  totalRows: number;
  validRows: number;
  processedRows: number;
  created: number;
  updated: number;
  failed: number;
  preview: { row: number; phone: string; name: string; attributes: Record<string, string> }[];
  failures: RowFailure[];
  hasMoreFailures: boolean;
  error: string | null;
}
