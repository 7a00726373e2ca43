// A section the member's role lacks, reached by its address: its name and a plain "no permiso".
import { useRef } from 'preact/hooks';
import { useFocusOnChange } from '../focus';
import type { Section } from '../sections';
import { texts } from '../texts';

export function DeniedPage({ section }: { section: Section }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, section.slug);
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {section.name}
      </h1>
      <p>{texts.denied}</p>
    </>
  );
}
