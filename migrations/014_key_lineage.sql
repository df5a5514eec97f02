-- Who created each key: the key whose authority minted it (POST /keys, the dashboard's developer
-- screen, or the caller of a rotation, whose new key it is). null: the operator's CLI or account
-- creation, and every key created before this migration (no record of it was kept).
-- Approvals refuse a key its requester created, directly or through others (src/keys/lineage.ts).
alter table api_keys add column created_by_key text references api_keys (id);
