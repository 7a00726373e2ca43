-- WhatsApp Cloud API (issue 5): templates are found by Meta's template id on sync and on
-- message_template_status_update webhooks; numbers by their WABA for template webhooks.
CREATE INDEX templates_external_id ON templates (external_id) WHERE external_id IS NOT NULL;
CREATE INDEX phone_numbers_cloud_waba ON phone_numbers (cloud_waba_id) WHERE cloud_waba_id IS NOT NULL;
