-- wrk script for bench/booking.ts. Arguments after `--` are key=value pairs:
--   mode=plain|base_lead|slots|book
--   leads=N     lead ids 1..N picked at random (base_lead)
--   slug=S      the link (slots, book)
--   base=E      book: the first slot's epoch; step=S seconds between slots
--   run=N       book: an offset (in slots) that keeps runs in distinct slots
-- Books go into distinct slots (thread t takes slots t, t+T, t+2T, …) from distinct client
-- addresses, so that neither the slot lock nor the write limit (10 an hour per address) is what
-- is measured. Every mode defines request(), so all pay wrk the same per-request Lua cost.
local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local mode, leads, slug, base, step, run, nthreads
local n = 0

function init(args)
  local opt = {}
  for _, a in ipairs(args) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    if k then opt[k] = v end
  end
  mode = opt.mode
  leads = tonumber(opt.leads or "1")
  slug = opt.slug or "bench-slots"
  base = tonumber(opt.base or "0")
  step = tonumber(opt.step or "300")
  run = tonumber(opt.run or "0")
  nthreads = tonumber(opt.threads or "2")
  math.randomseed(tid * 7919 + os.time())
end

function request()
  n = n + 1
  if mode == "plain" then
    return wrk.format("GET", "/plain")
  elseif mode == "base_lead" then
    return wrk.format("GET", "/lead?id=" .. math.random(1, leads))
  elseif mode == "slots" then
    return wrk.format("GET", "/book/api.php?action=slots&s=" .. slug)
  else
    local k = run + (n - 1) * nthreads + (tid - 1)
    local epoch = base + k * step
    local ip = string.format("10.%d.%d.%d", math.floor(k / 65536) % 256, math.floor(k / 256) % 256, k % 256)
    local body = string.format('{"slug":"%s","epoch":%d,"name":"Bench Person","phone":"555%07d","email":"b%d@example.com"}', slug, epoch, k % 10000000, k)
    return wrk.format("POST", "/book/api.php?action=book", { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = ip }, body)
  end
end

-- No response(): defining it makes wrk hand every body to Lua. Non-2xx answers are counted by wrk
-- (status_errors); bench/booking.ts counts the appointments written to check the books.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status_errors":%d,"socket_errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.status,
    e.connect + e.read + e.write + e.timeout))
end
