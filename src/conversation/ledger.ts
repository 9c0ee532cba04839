// The token ledger's rules (docs/conversations.md). The agent's final `result` is the only source
// that counts output tokens correctly, so its totals replace anything counted before. Until it
// comes (and for ever, if the run dies first) the row is partial: input and cache tokens summed
// over the API calls seen, each call once (by its message id, however many stream events repeat
// it), output tokens and cost unknown: null, not 0.
import type { ConversationStats, ModelUsageRow } from '../domain/conversation.js';
import type { StreamUsage } from '../lifecycle/types.js';

/** The input side of one API call, as every assistant event of its message repeats it. */
export interface CallUsage {
  input_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
}

/** The figures of a final result event. */
export interface ResultFigures {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  cost_usd: number | null;
  models: ModelUsageRow[];
}

export class RunningLedger {
  private readonly calls = new Map<string, CallUsage>();
  private result: ResultFigures | undefined;

  /** Counts an API call once; false when its message id was already counted. */
  addCall(messageId: string, usage: CallUsage): boolean {
    if (this.calls.has(messageId)) return false;
    this.calls.set(messageId, usage);
    return true;
  }

  /** The final result: replaces, never adds to, what was counted (a result read twice counts once). */
  setResult(figures: ResultFigures): void {
    this.result = figures;
  }

  stats(messagesExchanged: number): ConversationStats {
    if (this.result) {
      const r = this.result;
      return {
        messages_exchanged: messagesExchanged,
        total_input_tokens: r.input_tokens,
        total_output_tokens: r.output_tokens,
        total_cache_tokens: r.cache_read_tokens + r.cache_creation_tokens,
        cache_read_tokens: r.cache_read_tokens,
        cache_creation_tokens: r.cache_creation_tokens,
        cost_usd: r.cost_usd,
        partial: false,
        models: r.models,
      };
    }
    let input = 0;
    let read = 0;
    let creation = 0;
    for (const c of this.calls.values()) {
      input += c.input_tokens;
      read += c.cache_read_tokens;
      creation += c.cache_creation_tokens;
    }
    return {
      messages_exchanged: messagesExchanged,
      total_input_tokens: input,
      total_output_tokens: null,
      total_cache_tokens: read + creation,
      cache_read_tokens: read,
      cache_creation_tokens: creation,
      cost_usd: null,
      partial: true,
      models: [],
    };
  }
}

/** What OnStreamFinish hooks receive; null when the run reported no tokens at all (a plain command agent). */
export function streamUsageOf(stats: ConversationStats, tokenless: boolean): StreamUsage | null {
  if (tokenless) return null;
  return {
    input_tokens: stats.total_input_tokens,
    output_tokens: stats.total_output_tokens,
    cache_read_tokens: stats.cache_read_tokens,
    cache_creation_tokens: stats.cache_creation_tokens,
    cost_usd: stats.cost_usd,
    partial: stats.partial,
  };
}

/** A tokenless run (a command agent without stream-json): zeros, not partial, no cost. */
export function tokenlessStats(messagesExchanged: number): ConversationStats {
  return {
    messages_exchanged: messagesExchanged,
    total_input_tokens: 0,
    total_output_tokens: 0,
    total_cache_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    cost_usd: null,
    partial: false,
    models: [],
  };
}
