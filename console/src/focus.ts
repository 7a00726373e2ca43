import type { RefObject } from 'preact';
import { useEffect } from 'preact/hooks';

let firstPage = true;

/**
 * A route change moves focus to the page's h1 (tabIndex -1), so screen readers announce the new
 * page; the first page of a load keeps the browser's own start (Tab reaches its first control).
 */
export function useFocusOnChange(ref: RefObject<HTMLElement | null>, key: string): void {
  useEffect(() => {
    if (firstPage) {
      firstPage = false;
      return;
    }
    ref.current?.focus();
  }, [key]);
}
