-- Each day's first responses counted in report_daily (fact `responses`, dim '': n = how many,
-- amount = their seconds summed), kept by a statement trigger on report_responses, in the
-- transaction that writes them.
--
-- Why: the Today report computes a day's median and 90th percentile from the day's rows, and for
-- the two days it shows beside today (yesterday, the same weekday last week) those rows rarely change.
-- src/reports/day-responses.ts keeps their percentiles in memory, valid while this counter reads the same
-- count and sum. report_responses is written only by inserts (a rebuild deletes and rewrites an
-- organization's rows and its counters in one transaction), so an unchanged count and sum is an
-- unchanged set of rows.
create function report_responses_added() returns trigger language plpgsql as $$
declare
  f record;
begin
  for f in
    select org_id, day, count(*) as n, sum(seconds)::numeric as secs from new_responses
    group by org_id, day order by org_id, day
  loop
    perform report_add(f.org_id, f.day, 'responses', '', f.n, f.secs);
  end loop;
  return null;
end $$;

-- Not quieted by a rebuild's flag: report_facts_rebuild deletes the organization's report_daily
-- rows before it writes report_responses, so this trigger counts what the rebuild writes.
create trigger report_responses_insert after insert on report_responses
  referencing new table as new_responses for each statement execute function report_responses_added();

insert into report_daily (org_id, day, fact, dim, stripe, n, amount)
select org_id, day, 'responses', '', nextval('report_daily_stripe'), count(*), sum(seconds)::numeric
from report_responses group by org_id, day;
