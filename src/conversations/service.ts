import type { Sql } from "../db/client";
import type { ApiKey } from "../auth/service";
import { AppError } from "../http/errors";
import { conversationJson } from "./queries";

/** The serialized Conversation result; a missing and an out-of-organization lead look the same. */
export async function getConversation(sql: Sql, key: ApiKey, leadId: number): Promise<string> {
  const body = await conversationJson(sql, key.orgId, leadId);
  if (body === null) throw new AppError("not_found");
  return body;
}
