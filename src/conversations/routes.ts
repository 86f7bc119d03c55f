import type { Deps } from "../http/deps";
import type { ApiV1Operation } from "../http/operation";
import { rawJson } from "../http/respond";
import { getConversation } from "./service";

/** GET r=conversations/{id} */
export const conversationOperations = (deps: Deps): ApiV1Operation[] => [
  {
    method: "GET",
    r: "conversations/{id}",
    spec: { need: { scope: "conversations:read", limit: "api_v1", scopeError: "wrong_scope" } },
    run: async ({ grant, id }) => rawJson(await getConversation(deps.sql, grant.actor, id)),
  },
];
