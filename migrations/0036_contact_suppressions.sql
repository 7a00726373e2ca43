-- An opt-out outlives the erasure of the person who gave it (docs/privacy.md "Erasure and export of
-- one person"): their "no" is an instruction to us, not data about them we may drop. Kept as the
-- SHA-256 of "account id:phone" with the two flags — no phone, no name, no date of theirs — and
-- applied by a trigger to a contact later created in the account with that phone, by whichever
-- path creates it (an inbound message, a send, POST /contacts, an import).
CREATE TABLE contact_suppressions (
  account_id        uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  phone_hash        text NOT NULL,
  opted_out         boolean NOT NULL,
  marketing_opt_out boolean NOT NULL,
  created_at        timestamptz NOT NULL,
  PRIMARY KEY (account_id, phone_hash)
);

CREATE FUNCTION contact_phone_hash(account uuid, phone text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT encode(sha256(convert_to(account::text || ':' || phone, 'UTF8')), 'hex')
$$;

CREATE FUNCTION contacts_apply_suppression() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s contact_suppressions%ROWTYPE;
BEGIN
  IF NEW.phone IS NOT NULL THEN
    SELECT * INTO s FROM contact_suppressions
    WHERE account_id = NEW.account_id AND phone_hash = contact_phone_hash(NEW.account_id, NEW.phone);
    IF FOUND THEN
      NEW.opted_out := NEW.opted_out OR s.opted_out;
      NEW.marketing_opt_out := NEW.marketing_opt_out OR s.marketing_opt_out;
    END IF;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER contacts_suppression BEFORE INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION contacts_apply_suppression();
