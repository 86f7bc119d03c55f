-- The wrk script of every benchmark suite; bench/lib.ts runs it. Arguments after `--` are
-- key=value pairs; bench/lib.ts always adds run=N (the wrk run's number within the suite, from 1)
-- and threads=T (wrk's -t).
--   mode=M      the request to make: one of the functions in `modes` below
--   keys=FILE   API keys, one a line, used round-robin (each thread from its own offset)
--   key=K       a single X-Api-Key value; the baseline modes send the header only when given
--               keys or a key (the core suite sends `none`, so its baselines parse a key header)
--   leads=N     lead ids 1..N picked at random (base_lead, lead, notes, sms)
--   phones=N    seeded phones 5550000001..555000000N (cti)
--   id=N        the one lead of conv, overlimit and replays
--   points=N    points per KPI batch (default 500)
--   slug=S      booking: the link; base=E the first slot's epoch, step=S seconds between slots,
--               offset=K the slot index to start from (keeps warm-up and measurement apart)
--   pool=P      dni: the pool key; visitors=N warm visitors w1..wN; addresses=N client addresses
--   path=P      console_path: the page to get (`~` for `&` in its query)
--   cookies=FILE  console: session cookies (`leadline_session=…`), one a line, used round-robin
--   soak: a mix (bench/soak.ts): new and returning DNI visitors, heartbeats, intake of new phones,
--               get lead and CTI lookup; keys=FILE with every scope, leads=N, phones=N, pool=P,
--               addresses=N (up to 16,777,216 distinct)
-- A mode is chosen once in init(), so every scenario pays wrk the same per-request Lua cost.
-- No response(): defining it makes wrk hand every body to Lua. done() prints one line
-- `BENCH {json}` that bench/lib.ts parses.

local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end

-- Options, read once per thread by init().
local opt = {}
local keys, nkeys, send_key
local leads, phones, lead_id, run, nthreads, points, page_path
local slug, base, step, offset
local pool, visitors, addresses
local cookies, ncookies, c = {}, 0, 0
local i, seq = 0, 0

local function next_key()
  i = i + 1
  return keys[i % nkeys + 1]
end

local function signed_in()
  c = c + 1
  return { ["Cookie"] = cookies[c % ncookies + 1] }
end

local function keyed()
  return { ["X-Api-Key"] = next_key() }
end

local function keyed_json()
  return { ["X-Api-Key"] = next_key(), ["Content-Type"] = "application/json" }
end

-- "10.a.b.c" for the k-th client address.
local function address(k)
  return string.format("10.%d.%d.%d", math.floor(k / 65536) % 256, math.floor(k / 256) % 256, k % 256)
end

local function dni(action, body)
  local headers = { ["Content-Type"] = "text/plain;charset=UTF-8", ["X-Forwarded-For"] = address(math.random(0, addresses - 1)), ["User-Agent"] = "wrk" }
  return wrk.format("POST", "/hooks/dni.php?action=" .. action, headers, body)
end

-- The soak's mix, by a draw of 1..100 per request: visitors are new (never seen: run, thread and
-- sequence make them distinct across the whole soak) or one of this thread's recent ones.
local function recent_visitor()
  return string.format("s%d_%d_%d", run, tid, math.max(1, seq - math.random(0, 2000)))
end

local modes = {
  -- Baselines (bench/baseline.ts).
  plain = function()
    return wrk.format("GET", "/plain", send_key and keyed() or nil)
  end,
  base_lead = function()
    return wrk.format("GET", "/lead?id=" .. math.random(1, leads), send_key and keyed() or nil)
  end,

  -- Console (bench/console.ts): pages of signed-in users.
  console_search = function()
    local n = math.random(1, phones)
    local q = string.format("%%28555%%29%%20%03d-%04d", math.floor(n / 10000), n % 10000)
    return wrk.format("GET", "/console/leads?q=" .. q, signed_in())
  end,
  console_name = function()
    return wrk.format("GET", "/console/leads?q=First" .. math.random(0, 499), signed_in())
  end,
  console_lead = function()
    return wrk.format("GET", "/console/leads/" .. lead_id, signed_in())
  end,
  -- bench/reports.ts: one page (path=…, its query `&` written as `~`: wrk's arguments are split on neither).
  console_path = function()
    return wrk.format("GET", page_path, signed_in())
  end,

  -- Core API.
  lead = function()
    return wrk.format("GET", "/hooks/api_v1.php?r=leads/" .. math.random(1, leads), keyed())
  end,
  cti = function()
    local phone = string.format("555%07d", math.random(1, phones))
    return wrk.format("GET", "/hooks/api_v1.php?r=cti/lookup&phone=" .. phone, keyed())
  end,
  dial = function()
    local phone = string.format("555%07d", math.random(1, phones))
    return wrk.format("POST", "/hooks/api_v1.php?r=cti/dial", keyed_json(), string.format('{"phone":"%s"}', phone))
  end,
  conv = function()
    return wrk.format("GET", "/hooks/api_v1.php?r=conversations/" .. lead_id, keyed())
  end,
  overlimit = function()
    return wrk.format("GET", "/hooks/api_v1.php?r=leads/" .. lead_id, keyed())
  end,
  intake = function()
    seq = seq + 1
    -- 8, run digit, thread digit, 7-digit counter: never a seeded 555 number, never one of the
    -- previous run's.
    local phone = string.format("8%d%d%07d", run % 10, tid % 10, seq)
    local body = string.format('{"phone":"%s","list_id":101,"first_name":"Bench %d"}', phone, seq)
    return wrk.format("POST", "/hooks/lead_intake.php", keyed_json(), body)
  end,
  kpi = function()
    seq = seq + 1
    local prefix = string.format("r%dt%dn%d", run % 10, tid, seq)
    local parts = {}
    for j = 1, points do
      parts[j] = string.format('{"metric_key":"bench_m%d","value":%d,"day":"2026-11-22","dim_key":"%s-%d"}',
        j % 10, j, prefix, j)
    end
    local body = '{"points":[' .. table.concat(parts, ",") .. "]}"
    return wrk.format("POST", "/hooks/kpi_ingest.php", keyed_json(), body)
  end,

  -- Messaging: a new operation_id each (notes, sms), or the one recorded before the run (replays).
  notes = function()
    seq = seq + 1
    return wrk.format("POST", "/hooks/api_v1.php?r=messages", keyed_json(),
      string.format('{"lead_id":%d,"channel":"note","body":"Called, left a voicemail.","operation_id":"n%dt%d-%d"}',
        math.random(1, leads), run % 10, tid, seq))
  end,
  replays = function()
    return wrk.format("POST", "/hooks/api_v1.php?r=messages", keyed_json(),
      string.format('{"lead_id":%s,"channel":"note","body":"replayed","operation_id":"bench-replay"}', lead_id))
  end,
  sms = function()
    seq = seq + 1
    return wrk.format("POST", "/hooks/api_v1.php?r=messages", keyed_json(),
      string.format('{"lead_id":%d,"channel":"sms","body":"Hi {first_name}, thanks!","operation_id":"s%dt%d-%d"}',
        math.random(1, leads), run % 10, tid, seq))
  end,

  -- Booking.
  -- As the booking page and every browser ask: compressed when the answer is large.
  slots = function()
    return wrk.format("GET", "/book/api.php?action=slots&s=" .. slug, { ["Accept-Encoding"] = "gzip, deflate, br" })
  end,
  -- A client that takes no compression (curl without --compressed): for reference.
  slots_plain = function()
    return wrk.format("GET", "/book/api.php?action=slots&s=" .. slug)
  end,
  -- Books go into distinct slots (thread t takes slots t, t+T, t+2T, …) from distinct client
  -- addresses, so that neither the slot lock nor the write limit (10 an hour per address) is
  -- what is measured.
  book = function()
    seq = seq + 1
    local k = offset + (seq - 1) * nthreads + (tid - 1)
    local body = string.format('{"slug":"%s","epoch":%d,"name":"Bench Person","phone":"555%07d","email":"b%d@example.com"}',
      slug, base + k * step, k % 10000000, k)
    return wrk.format("POST", "/book/api.php?action=book", { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = address(k) }, body)
  end,

  -- Number insertion, each request from a random one of `addresses` client addresses (the
  -- per-address limit is counted as in production; TRUST_PROXY=loopback trusts wrk's header).
  dni_lease = function()
    return dni("lease", string.format('{"pool":"%s","visitor":"w%d","landing":"https://acme.example/"}', pool, math.random(1, visitors)))
  end,
  dni_beat = function()
    return dni("heartbeat", string.format('{"pool":"%s","visitor":"w%d"}', pool, math.random(1, visitors)))
  end,
  dni_event = function()
    return dni("event", string.format('{"pool":"%s","visitor":"w%d","kind":"pageview","name":"/pricing"}', pool, math.random(1, visitors)))
  end,
  soak = function()
    seq = seq + 1
    local d = math.random(1, 100)
    if d <= 35 then
      return dni("lease", string.format('{"pool":"%s","visitor":"s%d_%d_%d","utm":{"source":"soak"},"landing":"https://acme.example/"}', pool, run, tid, seq))
    elseif d <= 50 then
      return dni("lease", string.format('{"pool":"%s","visitor":"%s","landing":"https://acme.example/"}', pool, recent_visitor()))
    elseif d <= 62 then
      return dni("heartbeat", string.format('{"pool":"%s","visitor":"%s"}', pool, recent_visitor()))
    elseif d <= 77 then
      -- 8, two digits of the run (never 80x), thread digit, 6-digit counter: a new lead each.
      local phone = string.format("8%d%d%d%06d", 1 + run % 9, math.floor(run / 9) % 10, tid % 10, seq % 1000000)
      return wrk.format("POST", "/hooks/lead_intake.php", keyed_json(), string.format('{"phone":"%s","list_id":101,"first_name":"Soak %d"}', phone, seq))
    elseif d <= 92 then
      return wrk.format("GET", "/hooks/api_v1.php?r=leads/" .. math.random(1, leads), keyed())
    else
      return wrk.format("GET", "/hooks/api_v1.php?r=cti/lookup&phone=" .. string.format("555%07d", math.random(1, phones)), keyed())
    end
  end,

  dni_new = function()
    seq = seq + 1
    return dni("lease", string.format('{"pool":"%s","visitor":"n%d_%d_%d","utm":{"source":"bench"},"landing":"https://acme.example/"}',
      pool, run, tid, seq))
  end,
}

function init(args)
  for _, a in ipairs(args) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    if k then opt[k] = v end
  end
  leads = tonumber(opt.leads or "1")
  phones = tonumber(opt.phones or "1")
  lead_id = opt.id or "1"
  page_path = (string.gsub(opt.path or "/console", "~", "&"))
  run = tonumber(opt.run or "0")
  nthreads = tonumber(opt.threads or "2")
  points = tonumber(opt.points or "500")
  slug = opt.slug or "bench-slots"
  base = tonumber(opt.base or "0")
  step = tonumber(opt.step or "300")
  offset = tonumber(opt.offset or "0")
  pool = opt.pool
  visitors = tonumber(opt.visitors or "1")
  addresses = tonumber(opt.addresses or "65536")
  keys = {}
  if opt.keys then
    for line in io.lines(opt.keys) do
      if #line > 0 then keys[#keys + 1] = line end
    end
  end
  if opt.cookies then
    for line in io.lines(opt.cookies) do
      if #line > 0 then cookies[#cookies + 1] = line end
    end
  end
  ncookies = math.max(#cookies, 1)
  c = tid
  send_key = opt.keys ~= nil or opt.key ~= nil
  nkeys = #keys
  if nkeys == 0 then keys[1] = opt.key or "none"; nkeys = 1 end
  -- Threads start at different offsets in the key list, then step through it.
  i = math.floor((tid - 1) * nkeys / 2)
  math.randomseed(tid * 7919 + os.time())
  request = modes[opt.mode] or error("unknown mode " .. tostring(opt.mode))
end

-- Replaced by init(); defined here so that wrk knows the requests are made by the script.
function request()
  error("init() did not run")
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
