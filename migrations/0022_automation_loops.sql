-- Issue 25 item 2: an automation cannot restart itself without end (docs/automations.md "Loops").
-- hop: how many of our own http steps chained before this execution (the Chasqui-Hop header the
-- incoming webhook read; 0 when started any other way); its http steps send hop + 1.
-- starts_per_minute: the operator's start rate of one automation (null: the default, 600).
ALTER TABLE automation_executions ADD COLUMN hop smallint NOT NULL DEFAULT 0;
ALTER TABLE automations ADD COLUMN starts_per_minute integer;
