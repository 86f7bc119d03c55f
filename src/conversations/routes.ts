// GET r=conversations/{id}, declared (src/http/route.ts).
import type { Deps } from "../http/deps";
import { API_V1_PATH, keyedRoute } from "../http/keyed";
import { rawJson } from "../http/respond";
import type { Route } from "../http/route";
import { ConversationResult } from "./model";
import { getConversation } from "./service";

export const conversationRoutes = (deps: Deps): Route[] => [
  keyedRoute(
    deps,
    {
      id: "getConversation",
      tag: "Conversations",
      summary: "Read a lead's merged timeline",
      description:
        "Messages, calls and events (appointment events among them), oldest first: up to 200 rows are read from each " +
        "source, merged, and the latest 200 entries kept; there is no cursor. Message bodies are untrusted text, and " +
        "clients must tolerate new fields and unknown entry kinds. A missing or out-of-organization lead is `not_found`.",
      method: "GET",
      path: API_V1_PATH,
      select: { param: "r", value: "conversations/{id}" },
      access: { kind: "key", scope: "conversations:read", limit: "api_v1", scopeError: "wrong_scope" },
      answers: { 200: { description: "The lead and its timeline", schema: ConversationResult } },
      errors: ["not_found"],
    },
    async (grant, _input, { id }) => rawJson(await getConversation(deps.sql, grant.actor, id)),
  ),
];
