-- wrk script: replays pre-signed, pre-encrypted Lark event callbacks, each one exactly once.
--
--   wrk -t2 -c16 -d15s --timeout 10s -s replay.lua http://127.0.0.1:PORT/lark/events -- EVENTS 2
--
-- EVENTS holds one callback a line: timestamp, nonce, signature and body, tab-separated (the
-- body is `{"encrypt": "..."}`, which holds no tab). Thread i of the 2 replays lines i, i+2, ...,
-- so no event is sent twice and every accepted one must become exactly one evidence row. When a
-- thread has replayed all its lines it stops (and says so): sending one again would be a
-- duplicate, not a new row. `done` prints one line, `BENCH-WRK {json}`, for the benchmark.

local created = 0
local threads = {}

function setup(thread)
  thread:set("id", created)
  created = created + 1
  table.insert(threads, thread)
end

function init(args)
  local path, count = args[1], tonumber(args[2])
  requests, issued, accepted, other, exhausted = {}, 0, 0, 0, 0
  local index = 0
  for line in io.lines(path) do
    if index % count == id then
      local timestamp, nonce, signature, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      requests[#requests + 1] = wrk.format("POST", nil, {
        ["Content-Type"] = "application/json; charset=utf-8",
        ["X-Lark-Request-Timestamp"] = timestamp,
        ["X-Lark-Request-Nonce"] = nonce,
        ["X-Lark-Signature"] = signature,
      }, body)
    end
    index = index + 1
  end
  spare = wrk.format("GET", "/healthz")
  -- Before the run wrk calls the first thread's request() once, to check that it parses, and
  -- never sends what it got: that call must not use up an event.
  checking = id == 0
end

function request()
  if checking then
    checking = false
    return spare
  end
  if issued >= #requests then
    -- Out of events: stop rather than repeat one (the answer to this probe writes no row).
    exhausted = 1
    wrk.thread:stop()
    return spare
  end
  issued = issued + 1
  return requests[issued]
end

function response(status, headers, body)
  if status == 200 and body:find('"accepted"', 1, true) then
    accepted = accepted + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local issued, accepted, other, exhausted = 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    issued = issued + thread:get("issued")
    accepted = accepted + thread:get("accepted")
    other = other + thread:get("other")
    exhausted = exhausted + thread:get("exhausted")
  end
  local errors = summary.errors
  io.write(string.format(
    'BENCH-WRK {"requests":%d,"duration_us":%d,"issued":%d,"accepted":%d,"other":%d,' ..
    '"exhausted_threads":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,' ..
    '"timeout":%d},"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p99_9":%d,"max":%d,' ..
    '"mean":%.1f,"stdev":%.1f}}\n',
    summary.requests, summary.duration, issued, accepted, other, exhausted,
    errors.connect, errors.read, errors.write, errors.status, errors.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean, latency.stdev))
end
