/** Running protocol operations through `--remote`, the way a daemon configured with it does. */
import { op, type OpResult } from "../support/operation.ts";
import type { SshLab } from "../../kit/sshd.ts";

/** One lifecycle operation through `--remote` (the lab's URL and ssh configuration). */
export async function remoteOp(lab: SshLab, name: string, workspaceId: string | null, body: Record<string, unknown>, prefix = lab.prefix): Promise<OpResult> {
  return await op(name, workspaceId, body, {}, prefix);
}
