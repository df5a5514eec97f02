-- Tell every process sharing the database when an API key changes in a way that matters to auth
-- (revoked, expiry set or shortened by a rotation, scopes, deleted), so that its in-process key
-- cache drops the key at once (src/http/plugins/auth.ts, KeyCache). last_used_at alone is not
-- such a change: auth writes it (at most once a minute per key and process), and announcing it
-- would only empty caches. Delivered at commit, and only if the change commits.
create function plainpay_notify_api_key() returns trigger language plpgsql as $$
begin
  perform pg_notify('plainpay_api_keys', old.id);
  return null;
end;
$$;

create trigger api_keys_notify_update after update on api_keys
  for each row
  when ((to_jsonb(old) - 'last_used_at') is distinct from (to_jsonb(new) - 'last_used_at'))
  execute function plainpay_notify_api_key();

create trigger api_keys_notify_delete after delete on api_keys
  for each row execute function plainpay_notify_api_key();
