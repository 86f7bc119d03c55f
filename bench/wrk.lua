-- wrk script for bench/run.sh. Arguments after `--` are key=value pairs:
--   mode=plain|base_lead|lead|cti|conv|intake|kpi|overlimit
--   keys=FILE   API keys, one a line, used round-robin (each thread from its own offset)
--   leads=N     lead ids 1..N are picked at random (plain, base_lead, lead)
--   phones=N    seeded phones 5550000001..555000000N (cti)
--   id=N        the one lead of conv and overlimit
--   run=D       one digit, keeps intake phones / KPI dim keys distinct between runs
--   points=N    points per KPI batch (default 500)
-- Every mode defines request(), so every scenario pays wrk the same per-request Lua cost.
-- done() prints one line `BENCH {json}` that bench/bench.ts parses.

local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local mode, keys, nkeys, leads, phones, lead_id, run, points
local i = 0

function init(args)
  local opt = {}
  for _, a in ipairs(args) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    if k then opt[k] = v end
  end
  mode = opt.mode
  leads = tonumber(opt.leads or "1")
  phones = tonumber(opt.phones or "1")
  lead_id = opt.id or "1"
  run = opt.run or "0"
  points = tonumber(opt.points or "500")
  keys = {}
  if opt.keys then
    for line in io.lines(opt.keys) do
      if #line > 0 then keys[#keys + 1] = line end
    end
  end
  nkeys = #keys
  if nkeys == 0 then keys[1] = "none"; nkeys = 1 end
  -- Threads start at different offsets in the key list, then step through it.
  i = math.floor((tid - 1) * nkeys / 2)
  math.randomseed(tid * 7919 + os.time())
end

local function next_key()
  i = i + 1
  return keys[i % nkeys + 1]
end

local seq = 0

function request()
  local key = next_key()
  if mode == "plain" then
    return wrk.format("GET", "/plain", { ["X-Api-Key"] = key })
  elseif mode == "base_lead" then
    return wrk.format("GET", "/lead?id=" .. math.random(1, leads), { ["X-Api-Key"] = key })
  elseif mode == "lead" then
    return wrk.format("GET", "/hooks/api_v1.php?r=leads/" .. math.random(1, leads), { ["X-Api-Key"] = key })
  elseif mode == "cti" then
    local phone = string.format("555%07d", math.random(1, phones))
    return wrk.format("GET", "/hooks/api_v1.php?r=cti/lookup&phone=" .. phone, { ["X-Api-Key"] = key })
  elseif mode == "conv" then
    return wrk.format("GET", "/hooks/api_v1.php?r=conversations/" .. lead_id, { ["X-Api-Key"] = key })
  elseif mode == "overlimit" then
    return wrk.format("GET", "/hooks/api_v1.php?r=leads/" .. lead_id, { ["X-Api-Key"] = key })
  elseif mode == "intake" then
    seq = seq + 1
    -- 8, run digit, thread digit, 7-digit counter: never a seeded 555 number, never repeated.
    local phone = string.format("8%s%d%07d", run, tid % 10, seq)
    local body = string.format('{"phone":"%s","list_id":101,"first_name":"Bench %d"}', phone, seq)
    return wrk.format("POST", "/hooks/lead_intake.php",
      { ["X-Api-Key"] = key, ["Content-Type"] = "application/json" }, body)
  elseif mode == "kpi" then
    seq = seq + 1
    local prefix = string.format("r%st%dn%d", run, tid, seq)
    local parts = {}
    for j = 1, points do
      parts[j] = string.format('{"metric_key":"bench_m%d","value":%d,"day":"2026-11-22","dim_key":"%s-%d"}',
        j % 10, j, prefix, j)
    end
    local body = '{"points":[' .. table.concat(parts, ",") .. "]}"
    return wrk.format("POST", "/hooks/kpi_ingest.php",
      { ["X-Api-Key"] = key, ["Content-Type"] = "application/json" }, body)
  end
  error("unknown mode " .. tostring(mode))
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"mean_us":%.1f,"status_errors":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.status, e.connect, e.read, e.write, e.timeout))
end
