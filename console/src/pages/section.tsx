// A section not filled yet: its name, a plain "coming in the next version", and where to do the
// same today (the API reference served by this server). `denied`: a section the role lacks.
import { useRef } from 'preact/hooks';
import { useFocusOnChange } from '../focus';
import type { Section } from '../sections';
import { texts } from '../texts';

export function SectionPage({ section, denied = false }: { section: Section; denied?: boolean }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useFocusOnChange(heading, section.slug);
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {section.name}
      </h1>
      {denied ? (
        <p>{texts.denied}</p>
      ) : (
        <>
          <p>{texts.comingNext}</p>
          <p>
            Mientras tanto, podés hacerlo con la API: mirá la <a href="/docs">referencia de la API</a>.
          </p>
        </>
      )}
    </>
  );
}
