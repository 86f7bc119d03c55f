// The audit log's writers live beside the Actor (src/auth/audit.ts), so that services below the
// console write it too; the console's pages keep importing them from here.
export { audit, auditOutcome, auditRow } from "../auth/audit";
