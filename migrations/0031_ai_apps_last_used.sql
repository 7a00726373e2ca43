-- When a connected AI app last called /mcp (docs/mcp.md "Connected AI apps"): written by the /mcp
-- door at most once a minute per app and process, so a busy app costs one small UPDATE a minute.
ALTER TABLE ai_apps ADD COLUMN last_used_at timestamptz;
