# The README's two commands are `make run` and `make test`; both install what they need.
BUN := node_modules/.bin/bun
# deploy/demo.json is built into the executable (serve --demo).
SRC := $(shell find src sql -type f 2>/dev/null) deploy/demo.json

.PHONY: install run build test typecheck bench soak clean

install: node_modules/.installed

node_modules/.installed: package.json package-lock.json $(wildcard src/db/postgres-js/*.patch)
	npm ci --no-audit --no-fund
	@touch $@

build: dist/leadline

# The migrated embedded database (src/db/image.ts): initdb and every migration inside PGlite, once
# here instead of at every new DATA_DIR's first start. Made again when a migration or the database
# code changes.
IMAGE := dist/embedded-image.tar.gz
$(IMAGE): node_modules/.installed $(wildcard sql/*.sql) $(wildcard src/db/*.ts)
	$(BUN) src/db/build-image.ts $@

# src/db/postgres-js/check.ts fails the build when a dependency fix is missing from the executable.
dist/leadline: node_modules/.installed $(SRC) $(IMAGE)
	$(BUN) build --compile src/main.ts --outfile dist/leadline
	@$(BUN) src/db/postgres-js/check.ts dist/leadline || { rm -f dist/leadline; exit 1; }

# A fresh data directory gets the demo (deploy/demo.json); one with data is served as it is.
# The demo's keys are public (README.md, docs/tour.md): it listens on loopback unless HOST says otherwise.
run: build
	HOST=$${HOST:-127.0.0.1} ./dist/leadline serve --demo

# Provides a throwaway PostgreSQL when TEST_DATABASE_URL is unset (see test/run.ts). A broken
# build fails first and fast: the typecheck, the build, then the in-process tests, and only when
# they pass the tests that start processes (docs/testing.md).
test: node_modules/.installed
	$(BUN) run typecheck
	$(MAKE) --no-print-directory dist/leadline
	$(BUN) test/run.ts

typecheck: node_modules/.installed
	$(BUN) run typecheck

bench: node_modules/.installed dist/leadline
	bash bench/run.sh

# SOAK_MINUTES (default 10): bench/soak.ts, writing the soak section of bench/RESULTS.md.
soak: node_modules/.installed dist/leadline
	BENCH_SUITES=soak bash bench/run.sh

clean:
	rm -rf dist
