/**
 * The request deadline of the tests' instances, in process (StartOptions.deadlineMs, harness/app.ts)
 * and executables (REQUEST_DEADLINE_MS, harness/exe.ts): the contract's 1 s (src/db/deadline.ts)
 * turned a slow answer into a 503 whenever other work on the machine kept the process from running
 * for a second, in tests that are not about the deadline. A test about the deadline starts its
 * instance with the contract's (`{ deadlineMs: DEADLINE_MS }`, or `REQUEST_DEADLINE_MS: "1000"`).
 */
export const TEST_DEADLINE_MS = 10_000;
