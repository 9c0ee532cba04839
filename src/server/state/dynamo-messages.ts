// Messages in DynamoDB (server.messages: dynamodb://TABLE, seed 000), the rest of the state in SQL.
// One item per message: partition key "<account>/<conversation>", sort key "<turn>#<position>"
// (both zero-padded), so a query gives a conversation's messages turn by turn in the order each
// turn's run recorded them, page by page. Writes go in batches of 25, and what DynamoDB leaves
// unprocessed is retried with backoff. A turn's messages are always put whole, so putting them
// again replaces the same items.
// Loaded only when server.messages names a table (open.ts imports this module on demand).
import type { AttributeValue, BatchWriteItemInput } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  QueryCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import type { MessageRole, ToolCall } from '../../domain/conversation.js';
import { parseDuration } from '../../domain/duration.js';
import type { StoredMessage } from './types.js';
import { StateUnavailableError } from './unavailable.js';

const BATCH = 25;
const RETRIES = 8;
const PAGE = 500;
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
/** Deadlines of every call (issue 37): a DynamoDB that hangs fails the request with 503, not after minutes. */
const CONNECT_TIMEOUT_MS = 3_000;
const REQUEST_TIMEOUT_MS = 5_000;
const ATTEMPTS = 2;
/** `timeout=` bounds, so that a typo cannot make every call wait for minutes or fail at once. */
const TIMEOUT_MIN_MS = 100;
const TIMEOUT_MAX_MS = 120_000;

export interface DynamoTarget {
  table: string;
  endpoint: string | undefined;
  region: string | undefined;
  /** Each attempt's deadline (the connection's is the smaller of this and 3 s). */
  timeoutMs: number;
}

/** The accepted form, for errors: the range is TIMEOUT_MIN_MS to TIMEOUT_MAX_MS. */
export const DYNAMO_URL_FORM = 'dynamodb://TABLE[?endpoint=URL&region=NAME&timeout=DURATION] (timeout from 100ms to 2m)';

/** dynamodb://TABLE[?endpoint=URL&region=NAME&timeout=DURATION]; undefined when `text` is not one. */
export function parseDynamoUrl(text: string): DynamoTarget | undefined {
  const m = /^dynamodb:\/\/([^/?#]+)\/?(?:\?(.*))?$/.exec(text.trim());
  if (!m || !TABLE_NAME.test(m[1]!)) return undefined;
  const query = new URLSearchParams(m[2] ?? '');
  const timeout = query.get('timeout');
  const timeoutMs = timeout === null ? REQUEST_TIMEOUT_MS : parseDuration(timeout);
  if (timeoutMs === undefined || timeoutMs < TIMEOUT_MIN_MS || timeoutMs > TIMEOUT_MAX_MS) return undefined;
  return { table: m[1]!, endpoint: query.get('endpoint') ?? undefined, region: query.get('region') ?? undefined, timeoutMs };
}

/** DynamoDB not reached (no answer in time, network, 5xx, throttled past retries): StateUnavailableError. */
function unavailableIfDown<T>(call: Promise<T>, table: string): Promise<T> {
  return call.catch((error: Error & { $metadata?: { httpStatusCode?: number } }) => {
    const status = error.$metadata?.httpStatusCode;
    if (status !== undefined && status < 500 && status !== 429 && !/Throttl/.test(error.name)) throw error;
    throw new StateUnavailableError(`DynamoDB table ${table} does not answer: ${error.message || error.name}`, { cause: error });
  });
}

const pad = (n: number) => String(n).padStart(8, '0');
const partition = (account: string, conversationId: string) => `${account}/${conversationId}`;

function toItem(m: StoredMessage, position: number): Record<string, AttributeValue> {
  return {
    pk: { S: partition(m.account, m.conversation_id) },
    sk: { S: `${pad(m.turn)}#${pad(position)}` },
    key: { S: m.key },
    turn: { N: String(m.turn) },
    role: { N: String(m.role) },
    body: { S: m.body },
    timestamp: { N: String(m.timestamp) },
    tokens: { N: String(m.tokens) },
    tool_calls: { S: JSON.stringify(m.tool_calls) },
  };
}

/** Items read back are checked: a foreign or damaged item is an error naming the table. */
function fromItem(table: string, account: string, conversationId: string, item: Record<string, AttributeValue>): StoredMessage {
  const s = (k: string) => item[k]?.S;
  const n = (k: string) => Number(item[k]?.N);
  const role = n('role');
  let calls: unknown;
  try {
    calls = JSON.parse(s('tool_calls') ?? '');
  } catch {
    calls = undefined;
  }
  if (
    typeof s('key') !== 'string' ||
    typeof s('body') !== 'string' ||
    ![1, 2, 3].includes(role) ||
    !Array.isArray(calls) ||
    ![n('turn'), n('timestamp'), n('tokens')].every(Number.isFinite)
  ) {
    throw new Error(`DynamoDB table ${table}: an item of ${account}/${conversationId} is not a message`);
  }
  return {
    account,
    conversation_id: conversationId,
    key: s('key')!,
    turn: n('turn'),
    role: role as MessageRole,
    body: s('body')!,
    timestamp: n('timestamp'),
    tokens: n('tokens'),
    tool_calls: calls as ToolCall[],
  };
}

export class DynamoMessages {
  private constructor(
    private readonly client: DynamoDBClient,
    readonly table: string,
  ) {}

  /** Connects, and makes the table (on-demand billing) when it does not exist yet. */
  static async open(target: DynamoTarget): Promise<DynamoMessages> {
    // The SDK warns at every start that its releases of 2027 will need Node.js 22: atlas pins the
    // release it is tested with on Node.js 20, so the warning tells an operator nothing to do.
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    const client = new DynamoDBClient({
      ...(target.endpoint ? { endpoint: target.endpoint } : {}),
      ...(target.region ? { region: target.region } : {}),
      maxAttempts: ATTEMPTS,
      requestHandler: {
        connectionTimeout: Math.min(CONNECT_TIMEOUT_MS, target.timeoutMs),
        requestTimeout: target.timeoutMs,
        throwOnRequestTimeout: true,
      },
    });
    try {
      await unavailableIfDown(client.send(new DescribeTableCommand({ TableName: target.table })), target.table);
    } catch (error) {
      if ((error as Error).name !== 'ResourceNotFoundException') {
        client.destroy();
        throw new Error(`cannot reach DynamoDB table ${target.table}: ${(error as Error).message}`, { cause: error });
      }
      await client
        .send(
          new CreateTableCommand({
            TableName: target.table,
            BillingMode: 'PAY_PER_REQUEST',
            AttributeDefinitions: [
              { AttributeName: 'pk', AttributeType: 'S' },
              { AttributeName: 'sk', AttributeType: 'S' },
            ],
            KeySchema: [
              { AttributeName: 'pk', KeyType: 'HASH' },
              { AttributeName: 'sk', KeyType: 'RANGE' },
            ],
          }),
        )
        .catch((e: Error) => {
          // Made by another server meanwhile.
          if (e.name !== 'ResourceInUseException') throw e;
        });
      await waitUntilTableExists({ client, maxWaitTime: 60 }, { TableName: target.table });
    }
    return new DynamoMessages(client, target.table);
  }

  /** One round trip (for /ready). */
  async ping(): Promise<void> {
    await unavailableIfDown(this.client.send(new DescribeTableCommand({ TableName: this.table })), this.table);
  }

  /** Puts each turn's messages at their place in the turn (the order given). */
  async putMessages(messages: StoredMessage[]): Promise<void> {
    const positions = new Map<string, number>();
    const requests = messages.map((m) => {
      const group = `${partition(m.account, m.conversation_id)}#${m.turn}`;
      const position = positions.get(group) ?? 0;
      positions.set(group, position + 1);
      return { PutRequest: { Item: toItem(m, position) } };
    });
    await this.write(requests);
  }

  async listMessages(account: string, conversationId: string, options: { limit?: number; turn?: number } = {}): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const r = await unavailableIfDown(
        this.client.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: options.turn === undefined ? 'pk = :pk' : 'pk = :pk AND begins_with(sk, :turn)',
            ExpressionAttributeValues: {
              ':pk': { S: partition(account, conversationId) },
              ...(options.turn === undefined ? {} : { ':turn': { S: `${pad(options.turn)}#` } }),
            },
            ConsistentRead: true,
            Limit: Math.min(PAGE, (options.limit ?? Infinity) - out.length),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
        this.table,
      );
      for (const item of r.Items ?? []) out.push(fromItem(this.table, account, conversationId, item));
      start = r.LastEvaluatedKey;
    } while (start && out.length < (options.limit ?? Infinity));
    return out;
  }

  async removeConversation(account: string, conversationId: string): Promise<void> {
    for (;;) {
      const r = await unavailableIfDown(
        this.client.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': { S: partition(account, conversationId) } },
            ProjectionExpression: 'pk, sk',
            Limit: PAGE,
          }),
        ),
        this.table,
      );
      const keys = r.Items ?? [];
      if (keys.length === 0) return;
      await this.write(keys.map((k) => ({ DeleteRequest: { Key: { pk: k['pk']!, sk: k['sk']! } } })));
    }
  }

  /** BatchWriteItem in 25s; what DynamoDB leaves unprocessed (throttling) is sent again, with backoff. */
  private async write(requests: NonNullable<BatchWriteItemInput['RequestItems']>[string]): Promise<void> {
    for (let i = 0; i < requests.length; i += BATCH) {
      let pending = requests.slice(i, i + BATCH);
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > RETRIES) throw new Error(`DynamoDB table ${this.table} kept ${pending.length} writes unprocessed`);
        if (attempt > 0) await new Promise((r) => setTimeout(r, Math.min(2_000, 50 * 2 ** attempt)));
        const r = await unavailableIfDown(
          this.client.send(new BatchWriteItemCommand({ RequestItems: { [this.table]: pending } })),
          this.table,
        );
        pending = r.UnprocessedItems?.[this.table] ?? [];
      }
    }
  }

  close(): void {
    this.client.destroy();
  }
}
