// Live counters (docs/decisions.md "Campaign counters in the console"): `campaign.updated` and
// `campaign.completed` carry the whole Campaign (it replaces ours); a `message.status` of a
// campaign's message (delivered, read, failed later) makes the page read it again, at most once a
// second however many statuses arrive.
import { useEffect, useRef } from 'preact/hooks';
import { subscribe } from '../../api/live';
import type { Campaign } from './types';

const REFETCH_MS = 1_000;

/**
 * `onCampaign` with each Campaign the stream carries; `onStatus` (throttled: at most once a second)
 * after statuses of messages of campaigns `wanted` says yes to.
 */
export function useCampaignLive(onCampaign: (c: Campaign) => void, wanted: (campaignId: string) => boolean, onStatus: () => void): void {
  const fns = useRef({ onCampaign, wanted, onStatus });
  fns.current = { onCampaign, wanted, onStatus };
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const take = (data: unknown) => {
      const c = data as Campaign | null;
      if (c && typeof c.id === 'string') fns.current.onCampaign(c);
    };
    const status = (data: unknown) => {
      const id = (data as { campaignId?: unknown } | null)?.campaignId;
      if (typeof id !== 'string' || !fns.current.wanted(id) || timer) return;
      timer = setTimeout(() => {
        timer = null;
        fns.current.onStatus();
      }, REFETCH_MS);
    };
    const offs = [subscribe('campaign.updated', take), subscribe('campaign.completed', take), subscribe('message.status', status)];
    return () => {
      if (timer) clearTimeout(timer);
      for (const off of offs) off();
    };
  }, []);
}
