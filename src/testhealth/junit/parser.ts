/**
 * Streaming JUnit XML reader: only the enclosing suites and the one `<testcase>` being read are
 * held, and no text whole (names keep their head, NAME_LIMIT; other text its head and tail,
 * TEXT_LIMIT), so memory does not grow with the report (ADR 0013). A report is all or nothing: see
 * `parseJunit` for what a caller must do when it throws.
 */
import { SaxesParser, type SaxesTagPlain } from "saxes";
import { SaxesBounds, WRITE_SLICE } from "./bounded-saxes.js";
import { decodeXmlText, type JunitSource } from "./decode.js";
import { fitText, TextCollector } from "./long-text.js";
import {
  JunitParseError,
  NAME_LIMIT,
  TEXT_LIMIT,
  type AttemptFailure,
  type AttemptKind,
  type AttemptStatus,
  type ParsedAttempt,
  type ParsedTestCase,
} from "./types.js";
import { parseDurationMs, parseLineNumber, parseTimestampMs, truncate } from "./values.js";

export type { JunitSource } from "./decode.js";

export interface JunitParseOptions {
  /** Cap for messages, stack traces, output and other attributes (default TEXT_LIMIT). */
  textLimit?: number;
  /** Cap for test, class and suite names (default NAME_LIMIT). */
  nameLimit?: number;
}

/**
 * Streams the test cases of one JUnit report, each as soon as its `</testcase>` is read: a file cut
 * off near its end yields cases and then throws `JunitParseError`, and the caller must discard
 * every case the file produced. A file that is empty, not XML, not well-formed, or whose root is
 * not `<testsuites>`/`<testsuite>` throws `JunitParseError` with a one-sentence reason; a failure
 * of the source itself is passed through unchanged.
 */
export async function* parseJunit(
  source: JunitSource,
  options: JunitParseOptions = {},
): AsyncGenerator<ParsedTestCase> {
  const reader = new JunitReader(options);
  for await (const text of decodeXmlText(source)) {
    reader.write(text);
    yield* reader.takeCompleted();
  }
  reader.close();
  yield* reader.takeCompleted();
}

/** Whole-text convenience (tests, small reports): all test cases, or a `JunitParseError`. */
export async function parseJunitText(
  text: string | Uint8Array,
  options: JunitParseOptions = {},
): Promise<ParsedTestCase[]> {
  const cases: ParsedTestCase[] = [];
  for await (const testCase of parseJunit(inChunks(text), options)) cases.push(testCase);
  return cases;
}

/** Feeding large texts in slices keeps the queue of completed cases short. */
function* inChunks(text: string | Uint8Array, size = 65_536): Generator<string | Uint8Array> {
  if (text.length === 0) yield text;
  for (let at = 0; at < text.length; at += size) yield text.slice(at, at + size);
}

const ROOT_ELEMENTS = new Set(["testsuites", "testsuite"]);
const RESULT_ELEMENTS = new Set(["failure", "error", "skipped"]);
const RETRY_ELEMENTS: ReadonlyMap<string, AttemptKind> = new Map([
  ["flakyFailure", "flaky"],
  ["flakyError", "flaky"],
  ["rerunFailure", "rerun"],
  ["rerunError", "rerun"],
]);
/** Elements nested deeper than this are refused (no report needs it; each level costs memory). */
const MAX_DEPTH = 10_000;
/** Retry elements and properties kept per test case; further ones are ignored. */
const MAX_RETRIES = 1_000;
const MAX_PROPERTIES = 1_000;

/** Element text, trimmed; head and tail kept while a huge output streams by. */
type TextCapture = TextCollector;

/** A `<testsuites>` or `<testsuite>` we are inside, with what its test cases inherit. */
interface SuiteScope {
  /** Outermost `<testsuite>` name so far (Trunk keeps only the outermost suite); null above any suite. */
  outermostSuiteName: string | null;
  /** Nearest `file`/`filepath` of this or an enclosing suite. */
  file: string | null;
  /** Nearest readable `timestamp` of this or an enclosing suite. */
  startedAt: number | null;
}

interface RetryRecord {
  kind: AttemptKind;
  attributes: Record<string, string>;
  ownText: TextCapture;
  stackTrace: TextCapture | null;
  systemOut: TextCapture | null;
  systemErr: TextCapture | null;
}

interface TestCaseRecord {
  depth: number;
  attributes: Record<string, string>;
  scope: SuiteScope;
  /** The first `failure`/`error`/`skipped` child; later ones do not change the result (Trunk's rule). */
  result: { status: AttemptStatus; attributes: Record<string, string>; text: TextCapture } | null;
  retries: RetryRecord[];
  systemOut: TextCapture | null;
  systemErr: TextCapture | null;
  properties: Record<string, string> | null;
}

/** One open element: where its text goes, and what to do when it closes. */
interface OpenElement {
  name: string;
  capture: TextCapture | null;
  onClose: (() => void) | null;
}

class JunitReader {
  private readonly parser = new SaxesParser({ xmlns: false, position: true });
  private readonly textLimit: number;
  private readonly nameLimit: number;
  private readonly open: OpenElement[] = [];
  private readonly scopes: SuiteScope[] = [];
  private current: TestCaseRecord | null = null;
  /** Test cases read since the caller last took them: at most one input chunk's worth. */
  private completed: ParsedTestCase[] = [];
  private sawContent = false;
  private rootSeen = false;
  private rootClosed = false;
  private cdata = new CdataTracker();
  private readonly bounds: SaxesBounds;
  private propertyCount = 0;

  constructor(options: JunitParseOptions) {
    this.textLimit = options.textLimit ?? TEXT_LIMIT;
    this.nameLimit = options.nameLimit ?? NAME_LIMIT;
    // Attribute values are cut when their tag opens: enough for either rule applied afterwards.
    this.bounds = new SaxesBounds(
      this.parser,
      (text) => this.open.at(-1)?.capture?.append(text),
      Math.max(this.textLimit, 2 * this.nameLimit + 100),
    );
    this.parser.on("error", (error) => {
      this.onSaxesError(error);
    });
    this.parser.on("opentag", (tag) => {
      this.onOpen(tag);
    });
    this.parser.on("closetag", () => {
      this.onClose();
    });
    this.parser.on("text", (text) => {
      this.open.at(-1)?.capture?.append(text);
    });
    this.parser.on("cdata", (text) => {
      this.open.at(-1)?.capture?.append(text);
    });
  }

  write(text: string): void {
    let body = text;
    if (!this.sawContent) {
      // Leading blank lines before `<?xml` are harmless; anything else before markup means "not XML".
      body = body.trimStart();
      if (body === "") return;
      if (!body.startsWith("<"))
        throw new JunitParseError("not XML: the file does not start with '<'");
      this.sawContent = true;
    }
    for (let at = 0; at < body.length; at += WRITE_SLICE) {
      const slice = body.length <= WRITE_SLICE ? body : body.slice(at, at + WRITE_SLICE);
      this.cdata.see(slice);
      this.bounds.write(slice);
    }
  }

  close(): void {
    if (!this.sawContent) throw new JunitParseError("empty file");
    this.parser.close();
  }

  takeCompleted(): ParsedTestCase[] {
    const taken = this.completed;
    this.completed = [];
    return taken;
  }

  private onSaxesError(error: Error): void {
    const what = error.message.replace(/^\d+:\d+: /, "").replace(/\.$/, "");
    // `&#27;` and friends name characters XML forbids; producers escape ANSI codes that way. saxes
    // keeps the reference as literal text and goes on, and so do we.
    if (what === "malformed character entity") return;
    throw new JunitParseError(
      `not well-formed XML at line ${this.parser.line}: ${this.explain(what)}`,
    );
  }

  private explain(saxesMessage: string): string {
    if (this.rootClosed)
      return "content after the end of the root element (several documents in one file?)";
    const atEnd = saxesMessage === "unexpected end" || saxesMessage.startsWith("unclosed tag");
    if (atEnd && this.cdata.inside) return "unclosed CDATA section (file cut off?)";
    const innermost = this.open.at(-1);
    if (atEnd && innermost !== undefined) return `file ends inside <${innermost.name}> (cut off?)`;
    if (saxesMessage === "document must contain a root element") return "no root element";
    if (saxesMessage === "undefined entity")
      return "undefined entity (DTD entities are not expanded)";
    return saxesMessage;
  }

  private onOpen(tag: SaxesTagPlain): void {
    const name = tag.name;
    const attributes = this.bounds.attributes(tag.attributes);
    if (this.open.length >= MAX_DEPTH)
      throw new JunitParseError(`elements are nested more than ${MAX_DEPTH} levels deep`);
    const parent = this.open.at(-1);
    const element: OpenElement = { name, capture: parent?.capture ?? null, onClose: null };
    if (!this.rootSeen) {
      this.rootSeen = true;
      if (!ROOT_ELEMENTS.has(name))
        throw new JunitParseError(`root element <${name}> is not <testsuites> or <testsuite>`);
    }
    const testCase = this.current;
    if (testCase === null) this.openOutsideTestCase(element, attributes);
    else this.openInsideTestCase(testCase, element, attributes);
    this.open.push(element);
  }

  private openOutsideTestCase(element: OpenElement, attributes: Record<string, string>): void {
    if (element.name === "testsuites" || element.name === "testsuite") {
      this.scopes.push(this.scopeFor(element.name, attributes));
      element.onClose = () => this.scopes.pop();
    } else if (element.name === "testcase") {
      const scope = this.scopes.at(-1) ?? { outermostSuiteName: null, file: null, startedAt: null };
      const record = newTestCase(this.open.length, attributes, scope);
      this.current = record;
      this.propertyCount = 0;
      element.onClose = () => {
        this.current = null;
        this.completed.push(this.finish(record));
      };
    }
  }

  private scopeFor(element: string, attributes: Record<string, string>): SuiteScope {
    const enclosing = this.scopes.at(-1);
    const ownName =
      element === "testsuite" ? truncate(attributes.name ?? "", this.nameLimit) : null;
    const ownFile = attributes.file ?? attributes.filepath;
    return {
      outermostSuiteName: enclosing?.outermostSuiteName ?? ownName,
      file: ownFile !== undefined ? this.fit(ownFile) : (enclosing?.file ?? null),
      startedAt: parseTimestampMs(attributes.timestamp) ?? enclosing?.startedAt ?? null,
    };
  }

  private openInsideTestCase(
    testCase: TestCaseRecord,
    element: OpenElement,
    attributes: Record<string, string>,
  ): void {
    const level = this.open.length - testCase.depth; // 1: child of <testcase>, 2: grandchild
    const parentName = this.open.at(-1)?.name;
    const retry = testCase.retries.at(-1);
    if (level === 1) this.openTestCaseChild(testCase, element, attributes);
    else if (level === 2 && parentName !== undefined && RETRY_ELEMENTS.has(parentName) && retry)
      this.openRetryChild(retry, element);
    else if (level === 2 && parentName === "properties" && element.name === "property")
      this.openProperty(testCase, element, attributes);
  }

  private openTestCaseChild(
    testCase: TestCaseRecord,
    element: OpenElement,
    attributes: Record<string, string>,
  ): void {
    const { name } = element;
    element.capture = null;
    const retryKind = RETRY_ELEMENTS.get(name);
    if (RESULT_ELEMENTS.has(name) && testCase.result === null) {
      const status: AttemptStatus = name === "skipped" ? "skipped" : "failed";
      testCase.result = { status, attributes, text: this.capture() };
      element.capture = testCase.result.text;
    } else if (retryKind !== undefined && testCase.retries.length < MAX_RETRIES) {
      const retry: RetryRecord = {
        kind: retryKind,
        attributes,
        ownText: this.capture(),
        stackTrace: null,
        systemOut: null,
        systemErr: null,
      };
      testCase.retries.push(retry);
      element.capture = retry.ownText;
    } else if (name === "system-out") {
      element.capture = testCase.systemOut ??= this.capture();
    } else if (name === "system-err") {
      element.capture = testCase.systemErr ??= this.capture();
    }
  }

  private openRetryChild(retry: RetryRecord, element: OpenElement): void {
    if (element.name === "stackTrace") element.capture = retry.stackTrace ??= this.capture();
    else if (element.name === "system-out") element.capture = retry.systemOut ??= this.capture();
    else if (element.name === "system-err") element.capture = retry.systemErr ??= this.capture();
  }

  private openProperty(
    testCase: TestCaseRecord,
    element: OpenElement,
    attributes: Record<string, string>,
  ): void {
    const name = attributes.name;
    if (name === undefined || this.propertyCount >= MAX_PROPERTIES) return;
    this.propertyCount += 1;
    const text = this.capture();
    element.capture = text;
    element.onClose = () => {
      const value = attributes.value ?? text.value() ?? "";
      testCase.properties ??= Object.create(null) as Record<string, string>;
      testCase.properties[truncate(name, this.nameLimit)] = this.fit(value);
    };
  }

  private onClose(): void {
    const element = this.open.pop();
    element?.onClose?.();
    if (this.open.length === 0) this.rootClosed = true;
  }

  private capture(): TextCapture {
    return new TextCollector(this.textLimit, true);
  }

  /** Free text (not a name): head and tail, cut to the text limit. */
  private fit(text: string): string {
    return fitText(text, this.textLimit);
  }

  private finish(record: TestCaseRecord): ParsedTestCase {
    const { attributes, scope } = record;
    const startedAt = parseTimestampMs(attributes.timestamp) ?? scope.startedAt;
    const ownFile = attributes.file ?? attributes.filepath;
    const status = record.result?.status ?? "passed";
    const final: ParsedAttempt = {
      status,
      kind: "final",
      durationMs: parseDurationMs(attributes.time),
      startedAt,
      failure:
        status === "failed" && record.result
          ? this.failureOf(record.result.attributes, record.result.text)
          : null,
      systemOut: record.systemOut?.value() ?? null,
      systemErr: record.systemErr?.value() ?? null,
    };
    const retries = record.retries.map((retry) => this.retryAttempt(retry, startedAt));
    const parsed: ParsedTestCase = {
      name: truncate(attributes.name ?? "", this.nameLimit),
      classname: truncate(attributes.classname ?? "", this.nameLimit),
      parent: scope.outermostSuiteName ?? "",
      file: ownFile !== undefined ? this.fit(ownFile) : scope.file,
      line: parseLineNumber(attributes.line),
      idAttribute: attributes.id !== undefined ? this.fit(attributes.id) : null,
      attempts: [...retries, final],
    };
    if (record.properties !== null) parsed.properties = record.properties;
    return parsed;
  }

  /** A retry element is a failed attempt; its own `timestamp` if any, else the testcase's. */
  private retryAttempt(retry: RetryRecord, testCaseStartedAt: number | null): ParsedAttempt {
    return {
      status: "failed",
      kind: retry.kind,
      durationMs: parseDurationMs(retry.attributes.time),
      startedAt: parseTimestampMs(retry.attributes.timestamp) ?? testCaseStartedAt,
      failure: this.failureOf(retry.attributes, retry.stackTrace ?? retry.ownText),
      systemOut: retry.systemOut?.value() ?? null,
      systemErr: retry.systemErr?.value() ?? null,
    };
  }

  private failureOf(attributes: Record<string, string>, text: TextCapture): AttemptFailure {
    const { type, message } = attributes;
    return {
      type: type !== undefined ? this.fit(type) : null,
      message: message !== undefined ? this.fit(message) : null,
      text: text.value(),
    };
  }
}

function newTestCase(
  depth: number,
  attributes: Record<string, string>,
  scope: SuiteScope,
): TestCaseRecord {
  return {
    depth,
    attributes,
    scope,
    result: null,
    retries: [],
    systemOut: null,
    systemErr: null,
    properties: null,
  };
}

/**
 * Whether the input so far ends inside a CDATA section, judged from the last `<![CDATA[` and `]]>`
 * seen. Only used to word the error for a file cut off inside CDATA (saxes says "unexpected end").
 */
class CdataTracker {
  inside = false;
  private carry = "";

  see(text: string): void {
    const window = this.carry + text;
    const opened = window.lastIndexOf("<![CDATA[");
    const closed = window.lastIndexOf("]]>");
    if (opened > closed) this.inside = true;
    else if (closed > opened) this.inside = false;
    this.carry = window.slice(-8);
  }
}
