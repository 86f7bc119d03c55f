// The demo users' password hash is made once and shipped (src/demo/provision.ts): it must stay
// DEMO_PASSWORD's, at the cost every other console password gets (src/console/users.ts).
import { expect, test } from "bun:test";
import { PASSWORD_COST } from "../src/console/users";
import { DEMO_PASSWORD, DEMO_PASSWORD_HASH } from "../src/demo/provision";

test("DEMO_PASSWORD_HASH is DEMO_PASSWORD's, Argon2id at PASSWORD_COST", async () => {
  expect(await Bun.password.verify(DEMO_PASSWORD, DEMO_PASSWORD_HASH)).toBe(true);
  expect(await Bun.password.verify(`${DEMO_PASSWORD}x`, DEMO_PASSWORD_HASH)).toBe(false);
  expect(DEMO_PASSWORD_HASH).toStartWith(`$argon2id$v=19$m=${PASSWORD_COST.memoryCost},t=${PASSWORD_COST.timeCost},p=1$`);
});
