// The benchmark's throwaway PostgreSQL: started like the tests' (test/harness/cluster.ts), but with
// PostgreSQL's default durability, WAL sync timing (the DNI pool lock's commit), and pg_stat_statements for the report when it is installed.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startCluster as start, systemBinDir, type Cluster } from "../test/harness/cluster";

export { freePort, type Cluster } from "../test/harness/cluster";

export async function startCluster(): Promise<Cluster> {
  const bin = systemBinDir();
  if (!bin) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)");
  const statements = existsSync(join(bin, "..", "lib", "pg_stat_statements.so"));
  return start(bin, bin, ["max_connections = 100", "track_wal_io_timing = on", ...(statements ? ["shared_preload_libraries = 'pg_stat_statements'"] : [])]);
}
