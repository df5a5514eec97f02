-- Wake the settlement and webhook delivery workers when work is written, so that an idle worker
-- sleeps instead of polling (src/worker-job.ts; channels in src/db/notifications.ts). Like 018's
-- events trigger, a notification is sent at commit only, folded within a transaction, and is a hint:
-- the worker re-reads the tables, and still looks every few seconds in case one is lost.

-- A transfer queued (a payment's settlement, a payout, a split leg): the settlement worker plans it.
-- Per statement: one notification however many rows one insert queues.
create function plainpay_notify_settlement() returns trigger language plpgsql as $$
begin
  perform pg_notify('plainpay_settlement', '');
  return null;
end;
$$;

create trigger transfers_notify after insert on transfers
  for each statement execute function plainpay_notify_settlement();

-- A delivery becomes due sooner than the worker may know: a new one (written with its event), a
-- redelivery, or a retry brought forward. A claim (which pushes next_attempt_at out to the lease's
-- end) and a delivery that ends do not notify.
create function plainpay_notify_deliveries() returns trigger language plpgsql as $$
begin
  perform pg_notify('plainpay_deliveries', '');
  return null;
end;
$$;

create trigger event_deliveries_notify_insert after insert on event_deliveries
  for each statement execute function plainpay_notify_deliveries();

create trigger event_deliveries_notify_update after update of status, next_attempt_at on event_deliveries
  for each row
  when (new.status = 'pending' and (old.status <> 'pending' or new.next_attempt_at < old.next_attempt_at))
  execute function plainpay_notify_deliveries();
