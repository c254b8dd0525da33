// Composition root. Starts the role named by ROLE (or the first CLI argument); `all` by default.
// For now the edge serves health only; the roles are wired in as they land.
import uWS from 'uWebSockets.js';

const port = Number(process.env.PORT ?? 8080);
const app = uWS.App();
app.get('/healthz', (res) => {
  res.writeHeader('content-type', 'application/json').end('{"status":"ok"}');
});
app.listen('127.0.0.1', port, (socket) => {
  if (!socket) {
    console.error(`could not listen on port ${port}`);
    process.exit(1);
  }
  console.log(`listening on http://127.0.0.1:${port}`);
});
