/** What recall and the warnings endpoint answer (the server's JSON, with camel-case names for
 * the fields the client reads; `raw` keeps all of it). */

export interface RecallItem {
  experienceId: number;
  advice: string;
  polarity: string;
  score: number;
  scoreParts: Record<string, number>;
  environmentMatch: boolean | null;
  path: unknown[];
  /** episode (one run), workflow or insight (a task family's). */
  kind: string;
  /** The very same case as the query: `replay` holds that run with its literal values. */
  sameInstance: boolean;
  replay: string;
  /** External ids of the runs it came from (the first few). */
  sources: string[];
  raw: Record<string, any>;
}

export interface ToolWarning {
  patternId: number;
  message: string;
  occurrences: number;
  instead: string;
  /** The message, with what to do instead when the message does not already say it. */
  text: string;
  raw: Record<string, any>;
}

export interface Recall {
  id: number;
  items: RecallItem[];
  /** Ready to sit after the tool descriptions and before the user's input. */
  promptBlock: string;
  warnings: ToolWarning[];
  raw: Record<string, any>;
}

export function recallFromJson(data: Record<string, any>): Recall {
  return {
    id: data.id,
    items: (data.items ?? []).map((item: Record<string, any>) => ({
      experienceId: item.experience_id,
      advice: item.advice ?? "",
      polarity: item.polarity ?? "",
      score: Number(item.score ?? 0),
      scoreParts: item.score_parts ?? {},
      environmentMatch: item.environment_match ?? null,
      path: item.path ?? [],
      kind: item.kind ?? "episode",
      sameInstance: Boolean(item.same_instance),
      replay: item.replay ?? "",
      sources: item.sources ?? [],
      raw: item,
    })),
    promptBlock: data.prompt_block ?? "",
    warnings: (data.warnings ?? []).map(warningFromJson),
    raw: data,
  };
}

export function warningFromJson(data: Record<string, any>): ToolWarning {
  const message = String(data.message ?? "");
  const instead = String(data.instead ?? "");
  return {
    patternId: data.pattern_id ?? 0,
    message,
    occurrences: Number(data.occurrences ?? 0),
    instead,
    text: instead && !message.includes(instead) ? `${message} Instead: ${instead}` : message,
    raw: data,
  };
}
