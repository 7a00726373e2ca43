import type { RefObject } from 'preact';
import { useEffect } from 'preact/hooks';

/** A route change moves focus to the page's h1 (tabIndex -1), so screen readers announce the page. */
export function useFocusOnChange(ref: RefObject<HTMLElement | null>, key: string): void {
  useEffect(() => {
    ref.current?.focus();
  }, [key]);
}
