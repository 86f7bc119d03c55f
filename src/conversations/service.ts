import type { Actor } from "../auth/actor";
import type { Sql } from "../db/client";
import { AppError } from "../errors";
import { conversationJson } from "./queries";

/** The serialized Conversation result; a missing and an out-of-organization lead look the same. */
export async function getConversation(sql: Sql, actor: Actor, leadId: number): Promise<string> {
  const body = await conversationJson(sql, actor.orgId, leadId);
  if (body === null) throw new AppError("not_found");
  return body;
}
