// Test identity exactly as Trunk's uploader computes it (analytics-cli `context/src/meta/id.rs`,
// `gen_info_id`), so that ids minted here equal the ids Trunk's tools and dashboards use.
import { createHash } from "node:crypto";

/** RFC 4122 name-space ids (Appendix C). */
export const NAMESPACE_URL = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";
export const NAMESPACE_DNS = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";

const HYPHENATED_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Name-based UUID, version 5 (SHA-1), per RFC 4122 §4.3. */
export function uuidv5(namespace: string, name: string): string {
  if (!HYPHENATED_UUID.test(namespace)) {
    throw new TypeError(`uuidv5: the namespace must be a hyphenated UUID, got "${namespace}"`);
  }
  const digest = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name, "utf8")
    .digest();
  const bytes = digest.subarray(0, 16);
  bytes.writeUInt8((bytes.readUInt8(6) & 0x0f) | 0x50, 6); // version 5
  bytes.writeUInt8((bytes.readUInt8(8) & 0x3f) | 0x80, 8); // RFC 4122 variant
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What identifies a test case; a missing part counts as `""`. */
export interface TestIdentity {
  /** The organization's slug. */
  org: string;
  /** `host/owner/name`, see {@link repoFullName}. */
  repoFullName: string;
  file?: string | null | undefined;
  classname?: string | null | undefined;
  /** The test suite's name. */
  parent?: string | null | undefined;
  name?: string | null | undefined;
  variant?: string | null | undefined;
  /** The JUnit testcase's `id` attribute. */
  idAttribute?: string | null | undefined;
}

/**
 * The test's id. Without a variant it is the first pass; with variant `v` it is
 * `uuidv5(first pass + "#" + v)`, whatever rule produced the first pass (Trunk's current
 * `gen_info_id` re-hashes every first pass, including `trunk:` and v5-UUID id attributes).
 */
export function testId(identity: TestIdentity): string {
  const variant = identity.variant ?? "";
  const firstPass = testIdFirstPass(identity);
  return variant === "" ? firstPass : uuidv5(NAMESPACE_URL, `${firstPass}#${variant}`);
}

/**
 * Trunk's `gen_info_id_base`: the id before the variant's second pass. Exported because Trunk's
 * own test vectors pin it, and it shows which rule an id attribute selected.
 */
export function testIdFirstPass(identity: TestIdentity): string {
  const variantParts = identity.variant ? [identity.variant] : [];
  const idAttribute = identity.idAttribute ?? "";
  if (idAttribute.startsWith("trunk:")) {
    return hashParts([identity.org, identity.repoFullName, idAttribute, ...variantParts]);
  }
  const attributeUuid = parseVersion5Uuid(idAttribute);
  if (attributeUuid !== null) {
    // Trunk hashes the attribute's text as written; only the pass-through is canonicalized here.
    return identity.variant ? hashParts([idAttribute, identity.variant]) : attributeUuid.canonical;
  }
  // Any other id attribute (free text, a v4 UUID) is ignored, as in Trunk: its tests pin that a
  // v4 id attribute gives the same id as none.
  return hashParts([
    identity.org,
    identity.repoFullName,
    identity.file ?? "",
    identity.classname ?? "",
    identity.parent ?? "",
    identity.name ?? "",
    "JUNIT_TESTCASE", // Trunk's marker, kept for compatibility with its legacy ids
    ...variantParts,
  ]);
}

function hashParts(parts: readonly string[]): string {
  return uuidv5(NAMESPACE_URL, parts.join("#"));
}

// The spellings Rust's `Uuid::parse_str` accepts, which is what Trunk uses to recognize a UUID.
const UUID_SPELLINGS = [
  /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i,
  /^\{([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})\}$/i,
  /^urn:uuid:([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/i,
  /^([0-9a-f]{8})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{4})([0-9a-f]{12})$/i,
];

/** A version-5 UUID in any accepted spelling, as lowercase hyphenated text; else null. */
function parseVersion5Uuid(text: string): { canonical: string } | null {
  for (const spelling of UUID_SPELLINGS) {
    const groups = spelling.exec(text);
    if (groups === null) continue;
    const canonical = groups.slice(1, 6).join("-").toLowerCase();
    // Like Trunk, only the version nibble is checked, not the variant bits.
    return canonical.charAt(14) === "5" ? { canonical } : null;
  }
  return null;
}
