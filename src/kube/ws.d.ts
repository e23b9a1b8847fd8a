// The part of `ws` 8 this project uses (pods/exec over the API server's WebSocket, and the local servers its tests
// start). The package ships no types of its own and @types/ws is not a dependency; these follow ws's README.
declare module "ws" {
  import type { ClientRequest, IncomingMessage, Server as HttpServer } from "node:http";
  import type { Server as HttpsServer } from "node:https";
  import type { AddressInfo } from "node:net";
  import type { Duplex } from "node:stream";

  /** Options of a client connection: the TLS material and headers go to the upgrade request. */
  export interface ClientOptions {
    headers?: Record<string, string>;
    ca?: Buffer | string;
    cert?: Buffer | string;
    key?: Buffer | string;
    rejectUnauthorized?: boolean;
    servername?: string;
    /** The largest message accepted (bytes); a larger one closes the connection with 1009. */
    maxPayload?: number;
    handshakeTimeout?: number;
    perMessageDeflate?: boolean;
  }

  /** One WebSocket connection, client or server side. Binary messages arrive as one Buffer ('nodebuffer'). */
  export class WebSocket {
    static readonly CONNECTING: 0;
    static readonly OPEN: 1;
    static readonly CLOSING: 2;
    static readonly CLOSED: 3;
    constructor(address: string | URL, protocols?: string | string[], options?: ClientOptions);
    /** The subprotocol the server picked. */
    readonly protocol: string;
    readonly readyState: 0 | 1 | 2 | 3;
    /** Bytes queued by send() and not yet written to the socket. */
    readonly bufferedAmount: number;
    send(data: Buffer | string, cb?: (err?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    on(event: "open", listener: () => void): this;
    on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): this;
    on(event: "close", listener: (code: number, reason: Buffer) => void): this;
    on(event: "error", listener: (err: Error) => void): this;
    on(event: "unexpected-response", listener: (req: ClientRequest, res: IncomingMessage) => void): this;
    once(event: "open", listener: () => void): this;
    once(event: "message", listener: (data: Buffer, isBinary: boolean) => void): this;
    once(event: "close", listener: (code: number, reason: Buffer) => void): this;
    once(event: "error", listener: (err: Error) => void): this;
  }

  /** Options of a server: its own port, or upgrades of an existing HTTP(S) server. */
  export interface ServerOptions {
    host?: string;
    port?: number;
    server?: HttpServer | HttpsServer;
    /** Upgrades are handed over with handleUpgrade() by the caller's own "upgrade" listener. */
    noServer?: boolean;
    path?: string;
    handleProtocols?: (protocols: Set<string>, request: IncomingMessage) => string | false;
  }

  /** A WebSocket server. */
  export class WebSocketServer {
    constructor(options: ServerOptions, callback?: () => void);
    readonly clients: Set<WebSocket>;
    address(): AddressInfo | string;
    handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, callback: (socket: WebSocket, request: IncomingMessage) => void): void;
    close(cb?: (err?: Error) => void): void;
    on(event: "connection", listener: (socket: WebSocket, request: IncomingMessage) => void): this;
    on(event: "error", listener: (err: Error) => void): this;
  }

  export default WebSocket;
}
