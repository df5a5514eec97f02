-- Limits follow the principal (DESIGN.md §8, docs/policy.md "Keys for assistants"): a key handed to
-- an AI assistant is marked, and every call made with it is judged by the policy's mcp (assistant)
-- limits as well as by those of the channel it arrived on, so the assistant cannot step around its
-- limits by calling REST or the agent with the same key. Set when the key is made, copied by
-- rotation and to every key it creates; never changed afterwards.
alter table api_keys add column assistant boolean not null default false;
