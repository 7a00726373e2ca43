-- The recipients still to be sent (pending, or sending in a slice): the queue gauge of GET /metrics
-- (chasqui_queue_depth{queue="campaign_recipients"}, read at every scrape) finds them through this
-- index instead of reading every recipient of the sending campaigns; the sender's stuck-send check
-- (status 'sending') can use it too instead of reading the whole table.
CREATE INDEX campaign_recipients_waiting ON campaign_recipients (campaign_id) WHERE status IN ('pending', 'sending');
