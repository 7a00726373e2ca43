// What a page says after an action: a status line (role=status, announced politely) and, when the
// server refused, its text (role=alert). And what a page shows before its data: "Cargando…", or
// the reason it could not load. One copy for every section.

export function Feedback({ status, error }: { status: string; error: string }) {
  return (
    <>
      <p role="status" class="notice">
        {status}
      </p>
      {error && (
        <p role="alert" class="form-error">
          {error}
        </p>
      )}
    </>
  );
}

export function Loading({ error, loading }: { error: string | null | undefined; loading: string }) {
  return error ? (
    <p role="alert" class="form-error">
      {error}
    </p>
  ) : (
    <p role="status">{loading}</p>
  );
}
