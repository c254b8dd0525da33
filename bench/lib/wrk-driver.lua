-- wrk driver of the bench (bench/lib/wrk.ts). Each wrk thread reads the workload's requests
-- (BENCH_WRK_REQUESTS: one per line, tab-separated: method, path, body, header name/value pairs)
-- and sends them in order, thread k taking requests k, k + T, k + 2T, … (T threads): a list of
-- single-use requests (one quote per acceptance) is then never sent twice within one pass.
-- Statuses are counted per thread; with BENCH_WRK_COLLECT set, the string value of that JSON
-- field in each 200 answer is collected (e.g. accepted transaction ids for the cap check).
-- `done` prints one result block that wrk.ts parses.

local threads = {}
local thread_count = 0

function setup(thread)
  thread:set("thread_index", thread_count)
  thread_count = thread_count + 1
  table.insert(threads, thread)
end

local function split_tabs(line)
  local fields = {}
  local start = 1
  while true do
    local stop = string.find(line, "\t", start, true)
    if stop == nil then
      table.insert(fields, string.sub(line, start))
      return fields
    end
    table.insert(fields, string.sub(line, start, stop - 1))
    start = stop + 1
  end
end

function init(args)
  requests = {}
  for line in io.lines(os.getenv("BENCH_WRK_REQUESTS")) do
    if line ~= "" then
      local fields = split_tabs(line)
      local headers = {}
      for index = 4, #fields - 1, 2 do headers[fields[index]] = fields[index + 1] end
      local body = fields[3]
      if body == "" then body = nil end
      table.insert(requests, wrk.format(fields[1], fields[2], headers, body))
    end
  end
  position = thread_index
  stride = tonumber(os.getenv("BENCH_WRK_THREADS")) or 1
  statuses = {}
  collected = {}
  local field = os.getenv("BENCH_WRK_COLLECT") or ""
  if field ~= "" then collect_pattern = '"' .. field .. '":"([^"]*)"' end
end

function request()
  local next_request = requests[(position % #requests) + 1]
  position = position + stride
  return next_request
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if collect_pattern ~= nil and status == 200 then
    local value = string.match(body, collect_pattern)
    if value ~= nil then table.insert(collected, value) end
  end
end

function done(summary, latency, requests_summary)
  local out = {}
  table.insert(out, "--- wrk-result ---")
  table.insert(out, string.format("requests %d", summary.requests))
  table.insert(out, string.format("duration_us %d", summary.duration))
  table.insert(out, string.format("timeouts %d", summary.errors.timeout))
  table.insert(out, string.format("connect_errors %d", summary.errors.connect))
  table.insert(out, string.format("read_errors %d", summary.errors.read))
  table.insert(out, string.format("write_errors %d", summary.errors.write))
  table.insert(out, string.format("lat_min %d", latency.min))
  table.insert(out, string.format("lat_mean %f", latency.mean))
  table.insert(out, string.format("lat_max %d", latency.max))
  table.insert(out, string.format("lat_p50 %d", latency:percentile(50)))
  table.insert(out, string.format("lat_p90 %d", latency:percentile(90)))
  table.insert(out, string.format("lat_p99 %d", latency:percentile(99)))
  table.insert(out, string.format("lat_p999 %d", latency:percentile(99.9)))
  local totals = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do totals[status] = (totals[status] or 0) + count end
    for _, value in ipairs(thread:get("collected")) do table.insert(out, "collected -1 " .. value) end
  end
  for status, count in pairs(totals) do table.insert(out, string.format("status %d %d", status, count)) end
  table.insert(out, "--- wrk-end ---")
  io.write(table.concat(out, "\n") .. "\n")
end
