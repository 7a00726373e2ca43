// The Campaign as the operator routes answer it (src/campaigns/schemas.ts CampaignView), and the
// few shapes of the form's choices.
export interface Campaign {
  id: string;
  name: string;
  status: 'draft' | 'scheduled' | 'sending' | 'completed' | 'cancelled' | 'failed';
  phoneNumberId: string | null;
  templateId: string | null;
  variables: Record<string, string>;
  audience: { attributes?: Record<string, string> };
  recipients: number;
  sent: number;
  delivered: number;
  read: number;
  failed: number;
  scheduledAt: string | null;
  startedAt: string | null;
  completedAt: string | null;
  createdAt: string;
}

export interface Template {
  id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  body: string;
  variables: { name: string; label: string; example: string }[];
}

export interface PhoneNumber {
  id: string;
  phone: string;
  name: string | null;
  status: string;
  default: boolean;
}

/** A campaign a member may still cancel (the cancel route's own rule). */
export const cancellable = (c: Campaign): boolean => c.status === 'draft' || c.status === 'scheduled' || c.status === 'sending';
