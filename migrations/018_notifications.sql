-- Wake listeners (workers, the checkout page's status stream) when an event is written, instead of
-- their polling for it. pg_notify in a trigger is delivered at commit, and only if the transaction
-- commits; identical notifications in one transaction are folded into one. See src/db/notifications.ts.
create function plainpay_notify_event() returns trigger language plpgsql as $$
begin
  perform pg_notify('plainpay_events', new.type || ' ' || coalesce(new.object_id, ''));
  return null;
end;
$$;

create trigger events_notify after insert on events
  for each row execute function plainpay_notify_event();
