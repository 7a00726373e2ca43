// A TCP proxy in front of PostgreSQL or Redis that a fault test can cut and restore: cutting
// closes the listener and destroys every open connection (what a server restart looks like to
// its clients), without touching the machine's real servers that other work may be using.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class CuttableProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<number> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    return this.port;
  }

  /** The service "goes down": new connections are refused and open ones are cut. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The service is back on the same port. */
  async restore(): Promise<void> {
    await this.start(this.port);
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
