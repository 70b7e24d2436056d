/** The kit's one free loopback port. */
import { createServer, type AddressInfo } from "node:net";

/**
 * A TCP port on 127.0.0.1 the kernel just gave out and took back: nothing listens on it, so a
 * connection is refused (a host that does not answer) until a server the caller starts takes it.
 */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
