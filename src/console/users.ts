// TEMPORARY STUB of the core's src/console/users.ts (console.md): replaced by main's at merge.
export type Role = "admin" | "manager" | "agent";
export interface ConsoleUser { id: string; email: string; name: string; role: Role; orgId: number | null }
