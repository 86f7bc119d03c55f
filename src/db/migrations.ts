// Migrations compiled into the executable: nothing is read from disk at run time.
// Add a new file to sql/ and a line here; numbers are contiguous, checked at start, and a test
// checks this list against the files in sql/.
import m0001 from "../../sql/0001_init.sql" with { type: "text" };
import m0002 from "../../sql/0002_lead_placement.sql" with { type: "text" };
import m0003 from "../../sql/0003_room.sql" with { type: "text" };
import m0004 from "../../sql/0004_booking.sql" with { type: "text" };
import m0005 from "../../sql/0005_messaging.sql" with { type: "text" };
import m0006 from "../../sql/0006_granted_credits.sql" with { type: "text" };
import m0007 from "../../sql/0007_events.sql" with { type: "text" };
import m0008 from "../../sql/0008_dni.sql" with { type: "text" };
import m0009 from "../../sql/0009_hot_updates.sql" with { type: "text" };
import m0010 from "../../sql/0010_dni_visitor_pool.sql" with { type: "text" };
import m0011 from "../../sql/0011_dial_scope.sql" with { type: "text" };
import m0012 from "../../sql/0012_dni_retention.sql" with { type: "text" };
import m0013 from "../../sql/0013_key_prefix.sql" with { type: "text" };
import m0014 from "../../sql/0014_message_text_as_sent.sql" with { type: "text" };
import m0015 from "../../sql/0015_dni_holder.sql" with { type: "text" };
import m0016 from "../../sql/0016_console.sql" with { type: "text" };
import m0017 from "../../sql/0017_console_calls_dni.sql" with { type: "text" };
import m0018 from "../../sql/0018_console_leads.sql" with { type: "text" };
import m0019 from "../../sql/0019_lead_name_order.sql" with { type: "text" };
import m0020 from "../../sql/0020_automations_work_the_lead.sql" with { type: "text" };
import m0021 from "../../sql/0021_org_agents_export.sql" with { type: "text" };
import m0022 from "../../sql/0022_do_not_contact.sql" with { type: "text" };
import m0023 from "../../sql/0023_workspace.sql" with { type: "text" };
import m0024 from "../../sql/0024_attribution_outward.sql" with { type: "text" };
import m0025 from "../../sql/0025_booking_buffers.sql" with { type: "text" };
import m0026 from "../../sql/0026_lead_workspace.sql" with { type: "text" };
import m0027 from "../../sql/0027_reports.sql" with { type: "text" };
import m0028 from "../../sql/0028_leads_source.sql" with { type: "text" };
import m0029 from "../../sql/0029_drop_messages_unhandled.sql" with { type: "text" };
import m0030 from "../../sql/0030_attribution_rollup.sql" with { type: "text" };
import m0031 from "../../sql/0031_messages_statement_triggers.sql" with { type: "text" };
import m0032 from "../../sql/0032_today_counters.sql" with { type: "text" };
import m0033 from "../../sql/0033_response_counts.sql" with { type: "text" };

export const migrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  { version: 1, name: "0001_init", sql: m0001 },
  { version: 2, name: "0002_lead_placement", sql: m0002 },
  { version: 3, name: "0003_room", sql: m0003 },
  { version: 4, name: "0004_booking", sql: m0004 },
  { version: 5, name: "0005_messaging", sql: m0005 },
  { version: 6, name: "0006_granted_credits", sql: m0006 },
  { version: 7, name: "0007_events", sql: m0007 },
  { version: 8, name: "0008_dni", sql: m0008 },
  { version: 9, name: "0009_hot_updates", sql: m0009 },
  { version: 10, name: "0010_dni_visitor_pool", sql: m0010 },
  { version: 11, name: "0011_dial_scope", sql: m0011 },
  { version: 12, name: "0012_dni_retention", sql: m0012 },
  { version: 13, name: "0013_key_prefix", sql: m0013 },
  { version: 14, name: "0014_message_text_as_sent", sql: m0014 },
  { version: 15, name: "0015_dni_holder", sql: m0015 },
  { version: 16, name: "0016_console", sql: m0016 },
  { version: 17, name: "0017_console_calls_dni", sql: m0017 },
  { version: 18, name: "0018_console_leads", sql: m0018 },
  { version: 19, name: "0019_lead_name_order", sql: m0019 },
  { version: 20, name: "0020_automations_work_the_lead", sql: m0020 },
  { version: 21, name: "0021_org_agents_export", sql: m0021 },
  { version: 22, name: "0022_do_not_contact", sql: m0022 },
  { version: 23, name: "0023_workspace", sql: m0023 },
  { version: 24, name: "0024_attribution_outward", sql: m0024 },
  { version: 25, name: "0025_booking_buffers", sql: m0025 },
  { version: 26, name: "0026_lead_workspace", sql: m0026 },
  { version: 27, name: "0027_reports", sql: m0027 },
  { version: 28, name: "0028_leads_source", sql: m0028 },
  { version: 29, name: "0029_drop_messages_unhandled", sql: m0029 },
  { version: 30, name: "0030_attribution_rollup", sql: m0030 },
  { version: 31, name: "0031_messages_statement_triggers", sql: m0031 },
  { version: 32, name: "0032_today_counters", sql: m0032 },
  { version: 33, name: "0033_response_counts", sql: m0033 },
];
