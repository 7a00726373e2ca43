// The MCP servers that answer /mcp (docs/mcp.md "Transport", docs/performance.md "MCP tools/call
// after issue 30"): a pool of McpServers, each built once with every tool and connected once to
// an ExchangeTransport of its own. A request takes an idle server, hands it its JSON-RPC messages
// with the caller in `authInfo` (the tools read it from their context: nothing of a caller stays
// in a server), and gives it back once every request among them is answered. A server serves one
// HTTP request at a time, so two concurrent requests never share a server's request ids, abort
// controllers or answers. Stateless as before: a server that answered an `initialize` remembers
// the client's version and capabilities, so it is dropped instead of given back.
import type { AuthInfo, JSONRPCMessage, JSONRPCResponse, McpServer, RequestId, Transport } from '@modelcontextprotocol/server';

/** A message of the body, as the door parsed it (door.ts). */
type Inbound = JSONRPCMessage;

/** A request of the body: it has a method and an id (a notification has no id, a response no method). */
const isRequest = (m: Inbound): m is Inbound & { method: string; id: RequestId } => 'method' in m && 'id' in m;
/** What the server sends back for a request: no method, an id (a result or an error). */
const isResponse = (m: JSONRPCMessage): m is JSONRPCResponse => !('method' in m) && 'id' in m;

/**
 * The SDK's Transport for one HTTP request at a time, never closed: `exchange` delivers the
 * body's messages to the connected server and resolves with the answers to its requests, in the
 * order the requests came. Like the stateless transport in JSON mode (enableJsonResponse), what
 * the server sends besides those answers (progress, logging, requests to the client) is dropped.
 */
class ExchangeTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** The protocol versions of the connected server (the MCP-Protocol-Version header must be one). */
  supportedVersions: readonly string[] = [];
  /** The answers awaited for the current exchange, by request id (undefined until sent). */
  private awaited = new Map<RequestId, JSONRPCResponse | undefined>();
  private left = 0;
  private settle: ((answers: JSONRPCResponse[]) => void) | null = null;

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.supportedVersions = versions;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!isResponse(message) || message.id === undefined) return;
    if (!this.awaited.has(message.id) || this.awaited.get(message.id) !== undefined) return;
    this.awaited.set(message.id, message);
    this.left -= 1;
    if (this.left > 0 || !this.settle) return;
    const answers = [...this.awaited.values()] as JSONRPCResponse[];
    const settle = this.settle;
    this.awaited = new Map();
    this.settle = null;
    settle(answers);
  }

  /** Delivers the messages; resolves with the answers to the requests among them ([] if none). */
  exchange(messages: readonly Inbound[], authInfo: AuthInfo): Promise<JSONRPCResponse[]> {
    const deliver = () => {
      for (const m of messages) this.onmessage?.(m, { authInfo });
    };
    for (const m of messages) if (isRequest(m)) this.awaited.set(m.id, undefined);
    this.left = this.awaited.size;
    if (this.left === 0) {
      deliver();
      return Promise.resolve([]);
    }
    return new Promise((resolve) => {
      this.settle = resolve;
      deliver();
    });
  }
}

interface Pooled {
  server: McpServer;
  transport: ExchangeTransport;
}

/** Idle servers kept past a burst (more are built while more requests run at once, and dropped after). */
const MAX_IDLE = 64;

export interface ServerPool {
  /** The protocol versions the servers speak (the MCP-Protocol-Version header must be one of them). */
  readonly supportedVersions: readonly string[];
  /** Answers the body's messages with one idle server, the caller in `authInfo`. */
  exchange(messages: readonly Inbound[], authInfo: AuthInfo): Promise<JSONRPCResponse[]>;
}

export async function serverPool(build: () => McpServer): Promise<ServerPool> {
  const idle: Pooled[] = [];
  const connect = async (): Promise<Pooled> => {
    const server = build();
    const transport = new ExchangeTransport();
    await server.connect(transport);
    return { server, transport };
  };
  idle.push(await connect());
  return {
    supportedVersions: idle[0]!.transport.supportedVersions,
    async exchange(messages, authInfo) {
      const pooled = idle.pop() ?? (await connect());
      const answers = await pooled.transport.exchange(messages, authInfo);
      // `initialize` leaves the client's version and capabilities in the server: not for the next caller.
      const initialized = messages.some((m) => 'method' in m && m.method === 'initialize');
      if (!initialized && idle.length < MAX_IDLE) idle.push(pooled);
      return answers;
    },
  };
}
