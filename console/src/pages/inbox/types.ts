// What the inbox reads from the operator API (docs/operator.md "Inbox").
export interface Handling {
  type: 'automation' | 'agent' | 'team' | null;
  id: string | null;
  name: string | null;
}

export interface Contact {
  id: string;
  name: string;
  phone: string | null;
  username: string | null;
}

export interface Conversation {
  id: string;
  channel: 'whatsapp' | 'socialchat';
  windowOpenUntil: string | null;
  handling: Handling;
  openCaseId: string | null;
  contact: Contact;
}

export interface InboxItem extends Conversation {
  lastMessage: { id: string; direction: 'inbound' | 'outbound'; text: string | null; createdAt: string } | null;
}

export interface Message {
  id: string;
  direction: 'inbound' | 'outbound';
  status: string;
  type: string;
  text?: string | null;
  template?: { name: string };
  error: string | null;
  createdAt: string;
  timestamp?: string | null;
  from: string;
  by: { id: string | null; name: string } | null;
}

export interface Note {
  id: string;
  text: string;
  by: { name: string };
  createdAt: string;
}

export const contactName = (c: Contact): string => c.name || c.phone || (c.username ? `@${c.username}` : c.id.slice(0, 8));
