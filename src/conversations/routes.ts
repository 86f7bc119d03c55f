// GET r=conversations/{id}, declared (src/http/route.ts).
import { defineRoute } from "../http/define";
import type { Deps } from "../http/deps";
import { API_V1_PATH, keyAccess } from "../http/keyed";
import { rawJson } from "../http/respond";
import type { Route } from "../http/route";
import { keySurface } from "../http/surface";
import { ConversationResult } from "./model";
import { getConversation } from "./service";

export const conversationRoutes = (deps: Deps): Route[] => [
  defineRoute(
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
      access: keyAccess(deps, { scope: "conversations:read", limit: "api_v1", scopeError: "wrong_scope" }),
      surface: keySurface,
      answers: { 200: { description: "The lead and its timeline", schema: ConversationResult } },
      errors: ["not_found"],
    },
    async (_input, { grant, selected }) => rawJson(await getConversation(deps.sql, grant.actor, selected.id)),
  ),
];
