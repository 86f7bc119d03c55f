// The audit log's writer lives in src/auth/audit.ts, beside the Actor it records, so that services
// below the console (the workspace's actions, src/workspace/) write their rows with it too.
export { audit } from "../auth/audit";
