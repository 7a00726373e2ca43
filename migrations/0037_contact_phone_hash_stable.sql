-- contact_phone_hash was declared IMMUTABLE over convert_to, which is only STABLE: PostgreSQL then
-- refuses to inline it and runs it as a nested SQL function, planned again on each insert of a
-- contact (the suppression trigger of migrations/0036 calls it for every new contact). Declared
-- STABLE, as its body is, it is inlined into the trigger's cached lookup. Same hash, same bytes.
ALTER FUNCTION contact_phone_hash(uuid, text) STABLE;
