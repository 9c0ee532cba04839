// atlas receipts message RECEIPT_ID [--task ID] [--signature FILE]: the exact bytes a receipt
// signs (no trailing newline), and optionally its DER signature, for checking with other tools.
import { resolve } from 'node:path';
import { AtlasError, EXIT } from '../../domain/errors.js';
import { messageVersionOf, ReceiptFormatError, receiptMessage } from '../../domain/receipt.js';
import { requireTask } from '../../hook/resolve-task.js';
import { SHARED_FILE_MODE, writeFileAtomic } from '../../store/atomic-write.js';
import { readHookOfTask } from '../../store/hook-file.js';
import type { CliContext } from '../context.js';

export default async function receiptsMessage(
  ctx: CliContext,
  receiptId: string,
  opts: { task?: string; signature?: string },
): Promise<number> {
  const { ref } = requireTask({ taskId: opts.task, cwd: ctx.cwd, home: ctx.home, includeEnded: true });
  const hook = readHookOfTask(ref);
  const index = hook.receipts.findIndex((r) => r.receipt_id === receiptId);
  if (index < 0) {
    throw new AtlasError(`task ${ref.id} has no receipt ${receiptId}`, {
      exitCode: EXIT.notFound,
      hint: `\`atlas verify ${ref.id}\` lists its receipts, each line starting with the receipt id (\`atlas hook export --task ${ref.id}\` shows them in full)`,
    });
  }
  const receipt = hook.receipts[index]!;
  let message: string;
  try {
    message = receiptMessage(receipt);
  } catch (error) {
    if (error instanceof ReceiptFormatError)
      throw new AtlasError(`receipt ${receiptId} is malformed: ${error.message}`, { exitCode: EXIT.failure });
    throw error;
  }
  if (opts.signature) {
    if (!/^(?:[0-9a-f]{2})+$/.test(receipt.signature))
      throw new AtlasError(`receipt ${receiptId} has no hex signature`, { exitCode: EXIT.failure });
    writeFileAtomic(resolve(ctx.cwd, opts.signature), Buffer.from(receipt.signature, 'hex'), { mode: SHARED_FILE_MODE });
  }
  if (ctx.out.json) {
    ctx.out.result(
      {
        receipt_id: receiptId,
        index,
        message_version: messageVersionOf(receipt),
        message,
        key_path: receipt.key_path,
        signature: receipt.signature,
      },
      () => '',
    );
  } else {
    process.stdout.write(message);
  }
  return EXIT.ok;
}
