// Baseline 1, the edge's ceiling: a bare uWebSockets.js handler that reads the POST body and
// answers the same bytes POST /quote answers (a real quote body, passed in BENCH_RESPONSE_BODY).
// No routing table, no auth, no validation, no bus: what the HTTP server alone costs.
// Env: PORT, BENCH_RESPONSE_BODY. Prints `listening <port>` when bound.
import uWS from 'uWebSockets.js';

const bodyBytesMax = 64 * 1024;
const port = Number(process.env['PORT'] ?? '0');
const responseBody = process.env['BENCH_RESPONSE_BODY'] ?? '{}';

const app = uWS.App();
app.any('/*', (res) => {
  let aborted = false;
  let received = 0;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((chunk, isLast) => {
    received += chunk.byteLength;
    if (received > bodyBytesMax) {
      if (!aborted) res.cork(() => res.writeStatus('413 Payload Too Large').end('', true));
      aborted = true;
      return;
    }
    if (!isLast || aborted) return;
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(responseBody);
    });
  });
});
app.listen('127.0.0.1', port, (token) => {
  if (token === false) {
    process.stderr.write(`bare uWS could not listen on ${port}\n`);
    process.exit(1);
  }
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => {
  process.exit(0);
});
