-- Claims: one row per (consumer, message ID) whose handler committed.
CREATE TABLE {{schema}}.processed_messages (
    consumer     text        NOT NULL,
    message_id   text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);

-- Prune deletes by age.
CREATE INDEX processed_messages_processed_at_idx ON {{schema}}.processed_messages (processed_at);
