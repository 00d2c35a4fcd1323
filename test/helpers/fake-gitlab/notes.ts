import { GitLabError } from "./http.js";
import type { Merges } from "./merge.js";
import type { MergeRequests } from "./merge-requests.js";
import type { Award, MergeRequest, Note, User } from "./model.js";
import * as payloads from "./payloads.js";
import type { Webhooks } from "./webhooks.js";
import type { World } from "./world.js";

/**
 * Merge request notes: comments (Note Hook `create`, and `update` on edits from 16.11), threads
 * (resolvable), award emoji, and GitLab's quick actions. Only lines of the form `/<known
 * command> …` outside code blocks and quotes are commands; they are removed from the note and
 * carried out (`/merge`, `/draft`, `/ready`, `/label ~a ~"b c"`, `/unlabel`, `/close`,
 * `/reopen`, `/title`). `/trunk merge` or `/mainline …` are not commands and stay verbatim. A
 * note of commands only is not saved (the API answers 202 with the changes).
 */

const COMMANDS = new Set([
  "merge",
  "draft",
  "ready",
  "wip",
  "label",
  "unlabel",
  "close",
  "reopen",
  "title",
]);

export interface QuickAction {
  command: string;
  args: string;
}

/** Splits a note into its text and GitLab's quick actions (GitLab's extractor, simplified). */
export function extractQuickActions(body: string): { text: string; actions: QuickAction[] } {
  const kept: string[] = [];
  const actions: QuickAction[] = [];
  let fenced = false;
  for (const line of body.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m =
      fenced || line.startsWith(">") ? null : /^\/([a-z_]+)(?:\s+(.*))?$/.exec(line.trimEnd());
    if (m !== null && COMMANDS.has(m[1] ?? ""))
      actions.push({ command: m[1] ?? "", args: (m[2] ?? "").trim() });
    else kept.push(line);
  }
  return { text: kept.join("\n").trim(), actions };
}

/** `~a ~"b c" d` → ["a", "b c", "d"]. */
export function labelArgs(args: string): string[] {
  return [...args.matchAll(/~?"([^"]+)"|~?(\S+)/g)]
    .map((m) => m[1] ?? m[2] ?? "")
    .filter((t) => t !== "");
}

export class Notes {
  constructor(
    private readonly world: World,
    private readonly webhooks: Webhooks,
    private readonly mrs: MergeRequests,
    private readonly merges: Merges,
  ) {}

  /** A comment; its quick actions carried out first. Null when it held only commands. */
  async create(
    mr: MergeRequest,
    author: User,
    body: string,
    options: { internal?: boolean; thread?: boolean } = {},
  ): Promise<{ note: Note | null; summary: string[] }> {
    const { text, actions } = extractQuickActions(body);
    const summary: string[] = [];
    for (const action of actions) summary.push(await this.perform(mr, author, action));
    if (text === "" && actions.length > 0) return { note: null, summary };
    const now = Date.now();
    const note: Note = {
      id: this.world.nextId("note"),
      body: text,
      author,
      system: false,
      internal: options.internal ?? false,
      resolvable: options.thread ?? false,
      resolved: false,
      discussionId: this.world.random.hex(40),
      createdAt: now,
      updatedAt: now,
      awards: [],
    };
    mr.notes.push(note);
    this.webhooks.emit(
      mr.project,
      "Note Hook",
      payloads.note(this.world, mr, note, "create", await this.mrs.lastCommit(mr)),
    );
    return { note, summary };
  }

  private async perform(mr: MergeRequest, user: User, action: QuickAction): Promise<string> {
    switch (action.command) {
      case "merge":
        try {
          await this.merges.merge(mr, user, {});
          return "Merged this merge request.";
        } catch (error) {
          return error instanceof GitLabError ? "Could not apply merge command." : String(error);
        }
      case "draft":
      case "wip":
        await this.mrs.setDraft(mr, user, true);
        return "Marked this merge request as a draft.";
      case "ready":
        await this.mrs.setDraft(mr, user, false);
        return "Marked this merge request as ready.";
      case "label":
        await this.mrs.update(mr, user, { addLabels: labelArgs(action.args) });
        return `Added ${labelArgs(action.args)
          .map((l) => `~"${l}"`)
          .join(" ")} label(s).`;
      case "unlabel":
        await this.mrs.update(
          mr,
          user,
          action.args === "" ? { labels: [] } : { removeLabels: labelArgs(action.args) },
        );
        return "Removed label(s).";
      case "close":
        await this.mrs.setState(mr, user, "close");
        return "Closed this merge request.";
      case "reopen":
        await this.mrs.setState(mr, user, "reopen");
        return "Reopened this merge request.";
      default:
        await this.mrs.update(mr, user, { title: action.args });
        return `Changed the title to "${action.args}".`;
    }
  }

  note(mr: MergeRequest, id: number): Note {
    const found = mr.notes.find((n) => n.id === id);
    if (found === undefined) throw new GitLabError(404, "404 Note Not Found");
    return found;
  }

  /** An edit (Note Hook `update` from GitLab 16.11; none before). Quick actions are not run. */
  async edit(mr: MergeRequest, note: Note, body: string): Promise<void> {
    note.body = body;
    note.updatedAt = Date.now();
    if (this.world.profile.noteActions) {
      this.webhooks.emit(
        mr.project,
        "Note Hook",
        payloads.note(this.world, mr, note, "update", await this.mrs.lastCommit(mr)),
      );
    }
  }

  award(note: Note, user: User, name: string): Award {
    if (note.awards.some((a) => a.name === name && a.user.id === user.id)) {
      throw new GitLabError(404, "404 Award Emoji Name has already been taken Not Found");
    }
    const award: Award = { id: this.world.nextId("award"), name, user, createdAt: Date.now() };
    note.awards.push(award);
    return award;
  }

  resolve(mr: MergeRequest, discussionId: string, resolved: boolean): void {
    const notes = mr.notes.filter((n) => n.discussionId === discussionId && n.resolvable);
    if (notes.length === 0) throw new GitLabError(404, "404 Discussion Not Found");
    for (const n of notes) n.resolved = resolved;
  }
}
