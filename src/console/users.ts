// TEMPORARY stand-in for the core's users.ts (console.md's Core API); replaced by the core's at merge.
export type Role = "admin" | "manager" | "agent";
export interface ConsoleUser {
  id: string;
  email: string;
  name: string;
  role: Role;
  orgId: number | null;
}
