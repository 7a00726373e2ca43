// The console's one modal: a native `dialog` opened with showModal() when it mounts (focus moves
// in, the page behind is inert) and closed when it unmounts; Escape asks `onCancel` instead of
// closing it behind the page's back, so the page's state decides.
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useRef } from 'preact/hooks';

export function Modal(p: {
  class: string;
  /** The id of its heading (its accessible name). */
  labelledBy: string;
  /** The id of what it says (its description), when there is more than the heading. */
  describedBy?: string;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useLayoutEffect(() => {
    const d = dialog.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      class={p.class}
      aria-labelledby={p.labelledBy}
      aria-describedby={p.describedBy}
      onCancel={(e) => {
        e.preventDefault();
        p.onCancel();
      }}
    >
      {p.children}
    </dialog>
  );
}
