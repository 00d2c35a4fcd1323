/**
 * The commands people give the queue in a pull (or merge) request's comments, on any git host:
 * `/trunk merge [--priority=<p>] [--no-batch]` and `/trunk cancel` (`/mainline` alike). Pure:
 * each host's provider reads its comments, checks who wrote them, and acts through the
 * `PullRequestService`. GitLab strips only its own quick actions from a note, so `/trunk` lines
 * reach the hook as written.
 */
import { parsePriority } from "./model.js";

export type PullRequestCommand =
  | { kind: "merge"; priority: number | null; noBatch: boolean }
  | { kind: "cancel" }
  /** A comment addressed to the queue that is not a command it knows: answered with the usage. */
  | { kind: "invalid"; problem: string };

export const COMMAND_USAGE =
  "Usage: `/trunk merge [--priority=<urgent|high|medium|low|0-255>] [--no-batch]` submits this pull request to the merge queue of its base branch; `/trunk cancel` takes it out. `/mainline` works the same as `/trunk`.";

const PREFIX = /^\/(trunk|mainline)(?=\s|$)/i;

/**
 * The command in a comment's first line, or undefined when the comment is not addressed to the
 * queue (it does not start with `/trunk` or `/mainline`). Strict: anything but the grammar
 * below is `invalid`, with what was wrong.
 *
 *   /trunk merge [--priority=<p> | --priority <p> | -p <p>] [--no-batch]
 *   /trunk cancel
 */
export function parseCommand(body: string): PullRequestCommand | undefined {
  const line = body.trim().split(/\r?\n/, 1)[0] ?? "";
  const prefix = PREFIX.exec(line);
  if (!prefix) return undefined;
  const words = line.slice(prefix[0].length).trim().split(/\s+/).filter(Boolean);
  const [verb, ...rest] = words;
  const invalid = (problem: string): PullRequestCommand => ({ kind: "invalid", problem });
  switch (verb?.toLowerCase()) {
    case "cancel":
      return rest.length === 0 ? { kind: "cancel" } : invalid(`\`cancel\` takes no arguments.`);
    case "merge":
      break;
    case undefined:
      return invalid("No command given.");
    case "stack":
      return invalid("Stacked submissions (`stack`) are not supported by Mainline.");
    default:
      return invalid(`Unknown command \`${clip(verb ?? "")}\`.`);
  }
  let priority: number | null = null;
  let priorityGiven = false;
  let noBatch = false;
  for (let i = 0; i < rest.length; i++) {
    const word = rest[i] as string;
    let value: string | undefined;
    if (word === "--no-batch") {
      if (noBatch) return invalid("`--no-batch` is given twice.");
      noBatch = true;
      continue;
    }
    if (word === "--force" || word === "--direct") {
      return invalid(
        `\`${word}\` is not supported: Mainline tests every pull request before it merges.`,
      );
    }
    if (word.startsWith("--priority=")) value = word.slice("--priority=".length);
    else if (word === "--priority" || word === "-p") {
      value = rest[++i];
      if (value === undefined) return invalid(`\`${word}\` needs a priority.`);
    } else return invalid(`Unknown option \`${clip(word)}\`.`);
    if (priorityGiven) return invalid("The priority is given twice.");
    priorityGiven = true;
    const parsed = parsePriority(value);
    if (parsed === undefined) {
      return invalid(
        `\`${clip(value)}\` is not a priority: use urgent, high, medium, low or a whole number from 0 (most urgent) to 255.`,
      );
    }
    priority = parsed;
  }
  return { kind: "merge", priority, noBatch };
}

/** A word of the comment, quoted back safely (no backticks, bounded). */
function clip(word: string): string {
  const clean = word.replace(/`/g, "'");
  return clean.length > 40 ? `${clean.slice(0, 40)}…` : clean;
}
