// The audit log's writer lives beside the Actor (src/auth/audit.ts), where provisioning writes it
// too; the console's services import it from here.
export { audit, auditMany, auditOutcome, auditRow, type AuditEntry } from "../auth/audit";
