// The per-row after-insert triggers on messages exactly as sql/0023 and sql/0027 wrote them, before
// sql/0031 made them per statement: put back (in a transaction that is rolled back) as the
// reference the statement triggers are compared with (test/messages-statement-triggers.test.ts)
// and measured against (bench/reminders-insert.ts).
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "../..");

/** The statements that swap the per-statement triggers for the landed per-row ones. */
export function landedPerRow(): string[] {
  const read = (f: string) => readFileSync(join(root, "sql", f), "utf8");
  const m0023 = read("0023_workspace.sql");
  const m0027 = read("0027_reports.sql");
  const found = [
    m0023.match(/create function conversations_message\(\)[\s\S]*?end \$\$;/),
    m0023.match(/create trigger messages_conversation after insert on messages\s+for each row execute function conversations_message\(\);/),
    m0027.match(/create trigger messages_report_insert after insert on messages\s+for each row when \([^;]*\) execute function report_message\(\);/),
  ];
  if (found.some((m) => m === null)) throw new Error("the per-row definitions are no longer where sql/0023 and sql/0027 had them");
  return ["drop trigger messages_conversation on messages", "drop trigger messages_report_insert on messages", ...found.map((m) => m![0])];
}
