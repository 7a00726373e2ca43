-- A console stream ends the moment its session does (docs/console.md "Live updates"). Every
-- deleted session — logout, member disabled or removed (ON DELETE CASCADE fires this too),
-- expired — notifies the event bus's channel inside the deleting transaction: at commit, every
-- listening process closes that session's streams, in commit order with the events, so no event
-- committed after the session ended reaches them. One trigger, so no door that ends a session
-- can forget to tell the streams.
CREATE FUNCTION member_session_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('chasqui_events', '- ended ' || OLD.token_hash);
  RETURN NULL;
END
$$;

CREATE TRIGGER member_sessions_ended AFTER DELETE ON member_sessions
  FOR EACH ROW EXECUTE FUNCTION member_session_ended();
