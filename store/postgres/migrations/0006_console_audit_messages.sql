-- Console audit: the message IDs of a delete or redrive beyond the first
-- 10,000, which console_audit.message_ids holds. Row seq n is the action's
-- n-th ID (10,001 and on), so the column and this table together list every
-- ID in order. Written in the same transaction as the audit row; deleting
-- the row deletes its IDs.
CREATE TABLE {{schema}}.console_audit_messages (
    audit_id   bigint  NOT NULL REFERENCES {{schema}}.console_audit (id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    message_id text    NOT NULL,
    PRIMARY KEY (audit_id, seq)
);
