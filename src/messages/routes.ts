// POST r=messages: not available until the messaging issue lands.
import { AppError } from "../errors";
import type { Deps } from "../http/deps";
import { API_V1_BODY_LIMIT, type ApiV1Operation } from "../http/operation";

export const messageOperations = (_deps: Deps): ApiV1Operation[] => [
  {
    method: "POST",
    r: "messages",
    spec: { need: { scope: "messages:write", limit: "api_v1", scopeError: "wrong_scope" }, bodyLimit: API_V1_BODY_LIMIT },
    run: () => {
      throw new AppError("not_implemented", "message sending is not available in this version");
    },
  },
];
