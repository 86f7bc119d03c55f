// The demo users' password hash is made once and shipped (src/demo/provision.ts): it must stay
// DEMO_PASSWORD's, at the cost every other console password gets (src/auth/passwords.ts).
import { expect, test } from "bun:test";
import { ARGON2_COST } from "../src/auth/passwords";
import { DEMO_PASSWORD, DEMO_PASSWORD_HASH } from "../src/demo/provision";

test("DEMO_PASSWORD_HASH is DEMO_PASSWORD's, Argon2id at ARGON2_COST", async () => {
  expect(await Bun.password.verify(DEMO_PASSWORD, DEMO_PASSWORD_HASH)).toBe(true);
  expect(await Bun.password.verify(`${DEMO_PASSWORD}x`, DEMO_PASSWORD_HASH)).toBe(false);
  expect(DEMO_PASSWORD_HASH).toStartWith(`$argon2id$v=19$m=${ARGON2_COST.memoryCost},t=${ARGON2_COST.timeCost},p=1$`);
});
