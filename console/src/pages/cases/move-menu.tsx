// A card's `Mover a…` (console.md "Casos"; the keyboard's way to move a card): a menu button
// (aria-haspopup, aria-expanded) opening a `menu` of the other stages as `menuitem`s. Arrow keys
// move between them (Home, End too), Enter or Space picks one, Escape or Tab closes the menu and
// Escape puts the focus back on the button; a click outside closes it.
import type { Ref } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { casesTexts as t } from './texts';
import type { Stage } from './types';

export function MoveMenu({
  id,
  stages,
  describedBy,
  buttonRef,
  onPick,
}: {
  id: string;
  stages: Stage[];
  describedBy: string;
  buttonRef: Ref<HTMLButtonElement>;
  onPick: (stage: Stage) => void;
}) {
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const items = useRef<(HTMLButtonElement | null)[]>([]);
  const button = () => box.current?.querySelector<HTMLButtonElement>('button[aria-haspopup]') ?? null;

  useLayoutEffect(() => {
    if (open) items.current[active]?.focus();
  }, [open, active]);
  useEffect(() => {
    if (!open) return;
    const outside = (e: MouseEvent) => {
      if (!box.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('mousedown', outside);
    return () => document.removeEventListener('mousedown', outside);
  }, [open]);

  const show = (at: number) => {
    setActive((at + stages.length) % stages.length);
    setOpen(true);
  };
  const close = () => {
    setOpen(false);
    button()?.focus();
  };
  const onMenuKey = (e: KeyboardEvent) => {
    const last = stages.length - 1;
    if (e.key === 'ArrowDown') setActive((a) => (a >= last ? 0 : a + 1));
    else if (e.key === 'ArrowUp') setActive((a) => (a <= 0 ? last : a - 1));
    else if (e.key === 'Home') setActive(0);
    else if (e.key === 'End') setActive(last);
    else if (e.key === 'Escape') close();
    else if (e.key === 'Tab') setOpen(false);
    else return;
    if (e.key !== 'Tab') e.preventDefault();
  };

  return (
    <div class="move" ref={box}>
      <button
        ref={buttonRef}
        type="button"
        class="secondary"
        id={`${id}-button`}
        aria-haspopup="menu"
        aria-expanded={open ? 'true' : 'false'}
        aria-controls={open ? `${id}-menu` : undefined}
        aria-describedby={describedBy}
        onClick={() => (open ? setOpen(false) : show(0))}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown') show(0);
          else if (e.key === 'ArrowUp') show(-1);
          else return;
          e.preventDefault();
        }}
      >
        {t.moveTo}
      </button>
      {open && (
        <div role="menu" id={`${id}-menu`} aria-labelledby={`${id}-button`} class="move-menu" tabIndex={-1} onKeyDown={onMenuKey}>
          {stages.map((s, i) => (
            <button
              key={s.id}
              type="button"
              role="menuitem"
              tabIndex={-1}
              ref={(el) => {
                items.current[i] = el;
              }}
              onClick={() => {
                setOpen(false);
                onPick(s);
              }}
            >
              {s.name}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
