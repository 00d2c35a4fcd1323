import { describe, expect, it } from "vitest";
import { TRANSITION_REASONS } from "../../src/mergequeue/model.js";
import { describeReason } from "../../src/mergequeue/reasons.js";

/** The pages' words for the queue's reason codes: a sentence for each, never the code. */
describe("describeReason", () => {
  it("says why in a sentence, for every reason code", () => {
    expect(describeReason("pr_pushed_to")).toBe(
      "New commits were pushed to the pull request, so it left the queue.",
    );
    expect(describeReason("failing_required_check")).toBe("A required check failed.");
    const sentences = TRANSITION_REASONS.map(describeReason);
    for (const [i, sentence] of sentences.entries()) {
      expect(sentence, TRANSITION_REASONS[i]).toMatch(/^[A-Z][^_]*\.$/);
      // More than the code in other clothes.
      expect(sentence.toLowerCase()).not.toBe(`${TRANSITION_REASONS[i]?.replaceAll("_", " ")}.`);
    }
    expect(new Set(sentences).size).toBe(sentences.length);
  });

  it("shows a code it does not know in words", () => {
    expect(describeReason("some_new_reason")).toBe("some new reason.");
  });
});
