// The floor of the request-overhead figure: bare node:http answering the same JSON body that
// GET /api/v1/me answers, with no framework, no auth and no database. argv: port, body file.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [port, file] = process.argv.slice(2);
const body = readFileSync(file);
createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
